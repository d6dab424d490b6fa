// Gate 10, memory: inputs unmodified, canaries intact, every output written, no uninitialized reads, ASan clean.
#include <algorithm>
#include <chrono>

#include "gauntlet/cases/gate.h"
#include "gauntlet/cases/judge.h"
#include "memory_asan.h"
#include "memory_children.h"
#include "memory_sanitizer.h"

namespace gauntlet {

namespace {

using namespace memory_gate;

// Whether the second child's outputs are within the schema's tolerance of the first child's (the
// first taken as the reference, with the oracle's scale and K), for a schema whose runs may differ
// within that tolerance, or up to its outputs' equivalence (both put in the oracle's order first:
// topk's tied indices). `wrong` says how they are not; `harness` that gauntlet could not judge them
// (the oracle refused a case the kernel ran, no tolerance for the dtype): never the kernel's fault.
struct ToleranceCheck {
  std::string wrong, harness;
};

ToleranceCheck outside_tolerance(const GateContext& ctx, const Case& c, const std::vector<at::Tensor>& inputs,
                                 const CaseRun& first, const CaseRun& second) {
  ToleranceCheck out;
  const OracleResult oracle = run_oracle(ctx.schema.oracle, inputs, c.attrs);
  if (!oracle.ok()) return (out.harness = "the oracle rejected the case: " + oracle.error, out);
  auto tol = ctx.schema.tolerance.find(case_dtype(ctx.schema, c));
  if (tol == ctx.schema.tolerance.end())
    return (out.harness = "the schema declares no tolerance for the case's dtype", out);
  Outcome first_matched = first.outcome, second_matched = second.outcome;
  match_to_oracle(ctx, inputs, c.attrs, oracle.outputs, first_matched);
  match_to_oracle(ctx, inputs, c.attrs, oracle.outputs, second_matched);
  const wire::CallOutputs& a = first_matched.reply.calls.at(0);
  const wire::CallOutputs& b = second_matched.reply.calls.at(0);
  for (size_t i = 0; i < a.outputs.size() && i < b.outputs.size(); ++i) {
    const at::Tensor scale = i < oracle.scales.size() ? oracle.scales[i] : at::Tensor();
    if (scale.defined() && scale.sizes() != a.outputs[i].sizes())
      return (out.harness = "the oracle's scale has another shape than the output", out);
    const std::string oname = i < ctx.schema.outputs.size() ? ctx.schema.outputs[i].name : "output" + std::to_string(i);
    Judgement j = judge_output(oname, b.outputs[i], a.outputs[i].to(at::kDouble), scale,
                               expected_output_dtype(ctx.schema, i, c), tol->second, reduction_terms(ctx.schema, c));
    if (!j.pass) return (out.wrong = j.message, out);
  }
  return out;
}

class MemoryGate : public Gate {
 public:
  std::string name() const override { return kGate; }

  GateVerdict run(GateContext& ctx) override {
    const std::vector<Case> cases = make_cases(ctx);
    if (cases.empty()) {
      GateVerdict v;
      v.name = kGate;
      v.status = Status::HarnessError;
      v.category = Category::HarnessError;
      v.message = "no typical case could be generated inside the kernel's contract";
      return v;
    }
    return check_all(ctx, cases);
  }

  GateVerdict check_one(GateContext& ctx, const Case& c) override { return check_all(ctx, {c}); }

 private:
  // A handful of typical cases per dtype plus one with odd sizes (vector tails, partial tiles).
  static std::vector<Case> make_cases(GateContext& ctx) {
    std::vector<Case> out;
    for (size_t d = 0; d < ctx.space.dtypes().size(); ++d) {
      const DType dtype = ctx.space.dtypes()[d];
      Case first;
      for (int r = 0; r < 2 * ctx.budget; ++r) {
        Case c;
        std::string error;
        const uint64_t index = out.size();
        if (!ctx.space.typical_case(uint64_t(r) + d, dtype, Distribution::Normal, ctx.case_seed(kGate, index), &c, &error))
          continue;
        c.index = index;
        if (first.tensors.empty()) first = c;
        out.push_back(c);
      }
      if (first.tensors.empty()) continue;
      // Even sizes become odd (one less, or one more where that leaves the contract).
      std::map<std::string, int64_t> dims = first.dims;
      bool changed = false;
      for (auto& [name, v] : dims) {
        auto [lo, hi] = ctx.space.limits_for(name);
        if (v % 2) continue;
        if (v - 1 >= std::max<int64_t>(lo, 1)) v -= 1, changed = true;
        else if (v + 1 <= hi) v += 1, changed = true;
      }
      Case c;
      std::string error;
      const uint64_t index = out.size();
      if (changed && ctx.space.build(dims, 0, first.attrs, dtype, Distribution::Normal, ctx.case_seed(kGate, index), &c, &error)) {
        c.index = index;
        out.push_back(c);
      }
    }
    return out;
  }

  GateVerdict check_all(GateContext& ctx, const std::vector<Case>& cases) {
    GateVerdict failed;
    auto a = open_child(ctx, ctx.launcher, kPoisonA, kGuardBytes, ctx.so_path, &failed);
    if (!a) return failed;
    auto b = open_child(ctx, ctx.launcher, poison_b(ctx.manifest), kGuardBytes, ctx.so_path, &failed);
    if (!b) return failed;
    std::vector<std::vector<at::Tensor>> inputs;
    for (const Case& c : cases) {
      GateVerdict v = check_case(ctx, *a, *b, c, &inputs.emplace_back());
      if (v.status != Status::Pass) return v;
    }
    a->finish();
    b->finish();
    if (ctx.manifest.device == "cuda") return check_cuda_sanitizers(ctx, cases, inputs);
    AsanChild asan;
    open_asan(ctx, asan);
    for (size_t k = 0; k < cases.size() && asan.session; ++k) {
      GateVerdict v = check_asan(ctx, asan, cases[k], inputs[k]);
      if (v.status != Status::Pass) return v;
    }
    GateVerdict v;
    v.name = kGate;
    v.cases = int(cases.size());
    if (is_python_module(ctx.manifest))  // the Python worker poisons the heap, and has no canaries
      v.message = std::to_string(cases.size()) + " cases: inputs bitwise unmodified, outputs identical under heap poisons " +
                  hex(kPoisonA) + " and " + hex(poison_b(ctx.manifest)) +
                  " (glibc M_PERTURB on blocks up to 32 MB: every element written, nothing uninitialized read); no "
                  "canaries around buffers in the Python worker; ";
    else
      v.message = std::to_string(cases.size()) + " cases: inputs bitwise unmodified, " + std::to_string(kGuardBytes) +
                  "-byte canaries around every buffer intact, outputs identical under allocator poisons " +
                  hex(kPoisonA) + " and " + hex(poison_b(ctx.manifest)) + " (every element written, nothing uninitialized read); ";
    v.message += asan.skipped.empty() ? "AddressSanitizer build clean on " + std::to_string(asan.cases) + " cases"
                                      : "AddressSanitizer sub-check skipped: " + asan.skipped;
    v.evidence = {{"cases", cases.size()}, {"guard_bytes", kGuardBytes}, {"asan_cases", asan.cases}};
    if (!asan.skipped.empty()) v.evidence["asan_skipped"] = asan.skipped;
    return v;
  }

  // Both poisoned, guarded children: findings in either, then the outputs compared bitwise.
  GateVerdict check_case(GateContext& ctx, WorkerSession& a, WorkerSession& b, const Case& c,
                         std::vector<at::Tensor>* inputs) {
    CaseRun run;
    run.c = c;
    const auto t0 = std::chrono::steady_clock::now();
    run.inputs = materialize_all(c);
    *inputs = run.inputs;
    ctx.timing.inputs += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    run.outcome = timed_call(ctx, a, c, run.inputs);
    if (run.outcome.kind != Outcome::Kind::Ok) return error_from(ctx, run, "allocator poison " + hex(kPoisonA));
    CaseRun second = run;
    second.outcome = timed_call(ctx, b, c, run.inputs);
    if (second.outcome.kind != Outcome::Kind::Ok) return error_from(ctx, second, "allocator poison " + hex(poison_b(ctx.manifest)));
    for (const CaseRun* r : {&run, &second}) {
      const auto& f = r->outcome.reply.memory_findings;
      if (f.empty()) {
        if (!r->outcome.reply.inputs_unchanged) return failure(ctx, run, Category::WrongResult, "an input was modified in place");
        continue;
      }
      std::string msg = describe(ctx, f[0]);
      if (f.size() > 1) msg += " (and " + std::to_string(f.size() - 1) + " more)";
      GateVerdict v = failure(ctx, run, Category::WrongResult, msg);
      for (const wire::MemoryFinding& x : f)
        v.evidence["findings"].push_back(describe(ctx, x));
      return v;
    }
    nlohmann::json evidence;
    const std::string diff = compare_poisons(ctx, run.outcome.reply.calls.at(0), second.outcome.reply.calls.at(0), &evidence);
    if (diff.empty()) return passed();
    // A schema that declares bounded nondeterminism (float atomics) allows results that differ from
    // run to run, whether or not one more call happens to show it: with every element written, the
    // two children's results must then agree within the tolerance instead of bitwise (a difference
    // inside the declared freedom cannot be told from it; poison bytes read as values, or anything
    // else beyond the bound, still fail).
    if (evidence.value("never_written", int64_t(0)) == 0 && ctx.schema.determinism != "bitwise") {
      const ToleranceCheck check = outside_tolerance(ctx, c, run.inputs, run, second);
      if (!check.harness.empty()) {
        GateVerdict v;
        v.name = kGate;
        v.status = Status::HarnessError;
        v.category = Category::HarnessError;
        v.message = "case " + c.label + ": the two children's outputs differ and the schema allows differences within "
                    "its tolerance, but gauntlet could not judge them: " + check.harness;
        return v;
      }
      if (check.wrong.empty()) return passed();
      return failure(ctx, run, Category::WrongResult,
                     diff.substr(0, diff.find(": the result depends")) + " by more than the schema's declared nondeterminism " +
                         "allows (its tolerance, or its outputs' equivalence); the second child against the first: " +
                         check.wrong);
    }
    // No element holds the poisons: before blaming uninitialized memory, ask the first child
    // again. A kernel whose result varies from call to call differs between the children too.
    bool varies = false;
    if (evidence.value("never_written", int64_t(0)) == 0) {
      const Outcome again = timed_call(ctx, a, c, run.inputs);
      varies = again.kind == Outcome::Kind::Ok && !same_bytes(run.outcome.reply.calls.at(0), again.reply.calls.at(0));
    }
    GateVerdict v = failure(ctx, run, Category::WrongResult,
                            varies ? diff.substr(0, diff.find(": the result depends")) +
                                         ": the child poisoned " + hex(kPoisonA) +
                                         " gives another result when the same case is called again, so the result "
                                         "varies from call to call (nondeterminism, the determinism gate's finding); "
                                         "it is not shown to depend on uninitialized memory"
                                   : diff);
    v.evidence = evidence;
    if (varies) v.evidence["varies_between_calls"] = true;
    return v;
  }
};

}  // namespace

std::unique_ptr<Gate> make_memory_gate() { return std::make_unique<MemoryGate>(); }

}  // namespace gauntlet
