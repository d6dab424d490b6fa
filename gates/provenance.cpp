// Gate 12, provenance: the kernel computes the result itself (no forbidden ATen operator) and its output follows its inputs.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "gauntlet/cases/gate.h"
#include "gauntlet/cases/judge.h"
#include "gauntlet/oracle/module_oracle.h"
#include "gauntlet/common/rng.h"

namespace gauntlet {

// Testable pieces (tests/gates/provenance_test.cpp declares them).
namespace provenance_gate {

// A CUDA kernel must not compute on the host: the device-to-host transfers it made inside the call
// (CaseReply::host_copies), as one sentence naming the first; "" when there were none.
std::string host_copy_message(const std::vector<std::string>& input_names, const std::vector<wire::HostCopy>& copies) {
  if (copies.empty()) return "";
  const wire::HostCopy& h = copies.front();
  const std::string what = h.input >= 0 && size_t(h.input) < input_names.size() ? "input " + input_names[size_t(h.input)]
                           : h.input >= 0 ? "input " + std::to_string(h.input)
                                          : "a device tensor";
  std::string msg = "the kernel copied " + what + " (" + h.from + " \u2192 cpu, " + std::to_string(h.bytes) + " bytes, " +
                    h.op + ") to the host inside the call";
  if (copies.size() > 1) msg += " (and made " + std::to_string(copies.size() - 1) + " more device-to-host copies)";
  return msg + ": a CUDA kernel must compute on the device";
}

}  // namespace provenance_gate

namespace {

// Single-element changes tried per input (floating, or index) and case; each must move the oracle's output
// beyond the tolerance, or it is not evidence (relu of a negative number, a non-maximal element).
constexpr int kPerturbationsPerInput = 2;
constexpr int kPositionsTried = 8;
constexpr int kCasesPerDtype = 2;  // times --budget

// A value clearly different from `old` in the input's domain, exact in the dtype after rounding.
double perturbed_value(double old, bool positive) {
  const double step = std::max(0.75, std::fabs(old));
  if (positive) return std::fabs(old) + step;
  return old >= 0 ? old - 2 * step : old + 2 * step;
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

struct Judged {
  bool pass = true;
  Judgement j;
  std::string output;
};

class ProvenanceGate : public Gate {
 public:
  std::string name() const override { return "provenance"; }

  GateVerdict run(GateContext& ctx) override {
    GateVerdict failed;
    auto session = open_recording(ctx, &failed);
    if (!session) return failed;
    State st;
    int index = 0;
    for (size_t d = 0; d < ctx.space.dtypes().size(); ++d) {
      for (int k = 0; k < kCasesPerDtype * ctx.budget; ++k, ++index) {
        Case c;
        std::string error;
        const uint64_t seed = ctx.case_seed(name(), uint64_t(index));
        if (!ctx.space.typical_case(uint64_t(k) * 3 + d, ctx.space.dtypes()[d], Distribution::Normal, seed, &c, &error))
          continue;
        c.index = uint64_t(index);
        GateVerdict v = check_case(ctx, *session, c, seed, &st);
        if (v.status != Status::Pass) return finish(v, st);
      }
    }
    GateVerdict v;
    v.name = name();
    if (st.cases == 0) {
      v.status = Status::HarnessError;
      v.category = Category::HarnessError;
      v.message = "no case could be generated for this kernel's contract";
      return v;
    }
    v.message = std::to_string(st.cases) + " cases, no forbidden operator (calls: " + op_list(st.ops) + ")";
    if (ctx.manifest.device == "cuda")
      v.message += ", no device-to-host copy inside the call (seen at the ATen level; raw cudaMemcpy is not)";
    if (st.followed > 0)
      v.message += "; the output followed " + std::to_string(st.followed) + " single-element input changes";
    else
      v.message += "; no single-element input change moved the reference beyond tolerance (dependence unchecked)";
    return finish(v, st);
  }

  // Replays one case. A perturbed case (a floating input with a pinned element) runs after its
  // unperturbed base in the same child, as in the gate, since a kernel caching on part of its
  // input only shows itself in that order.
  GateVerdict check_one(GateContext& ctx, const Case& c) override {
    GateVerdict failed;
    auto session = open_recording(ctx, &failed);
    if (!session) return failed;
    State st;
    Case base = c;
    int perturbed = -1;
    for (size_t i = 0; i < base.tensors.size(); ++i)
      if (!base.tensors[i].specials.empty()) {
        base.tensors[i].specials.clear();
        perturbed = int(i);
      }
    if (perturbed < 0) return finish(check_base(ctx, *session, c, &st, nullptr), st);
    CaseRun base_run;
    GateVerdict v = check_base(ctx, *session, base, &st, &base_run);
    if (v.status != Status::Pass) return finish(v, st);
    return finish(check_perturbed(ctx, *session, base_run, c, size_t(perturbed), &st), st);
  }

 private:
  struct State {
    int cases = 0;
    int followed = 0;
    std::vector<std::string> ops;  // union over cases, first-seen order
  };

  static std::string op_list(const std::vector<std::string>& ops) {
    if (ops.empty()) return "no ATen operator";
    std::string s;
    for (size_t i = 0; i < ops.size() && i < 6; ++i) s += (i ? ", " : "") + ops[i];
    if (ops.size() > 6) s += " and " + std::to_string(ops.size() - 6) + " more";
    return s;
  }

  std::unique_ptr<WorkerSession> open_recording(GateContext& ctx, GateVerdict* failed) {
    wire::LoadRequest request;
    request.record_ops = true;
    return open_session_with(ctx, name(), failed, request);
  }

  GateVerdict finish(GateVerdict v, const State& st) {
    v.name = name();
    v.cases = st.cases;
    v.evidence["aten_ops"] = st.ops;
    v.evidence["dependence_checks"] = st.followed;
    return v;
  }

  GateVerdict fail(GateContext& ctx, const CaseRun& run, Category category, const std::string& message,
                   const nlohmann::json& evidence = nlohmann::json::object()) {
    GateVerdict v;
    v.name = name();
    v.status = Status::Fail;
    v.category = category;
    v.message = message;
    v.evidence = evidence;
    note_outputs(v, run);
    v.replay = write_replay(ctx, name(), run, v);
    return v;
  }

  // Every output against the oracle under the schema's tolerance for the case's dtype.
  Judged judge(GateContext& ctx, const Case& c, const std::vector<at::Tensor>& outs, const OracleResult& oracle) {
    Judged r;
    auto tol = ctx.schema.tolerance.find(case_dtype(ctx.schema, c));
    if (tol == ctx.schema.tolerance.end()) return r;  // the accuracy gate reports the missing tolerance
    const int64_t K = reduction_terms(ctx.schema, c);
    for (size_t i = 0; i < oracle.outputs.size() && i < outs.size(); ++i) {
      const std::string oname = i < ctx.schema.outputs.size() ? ctx.schema.outputs[i].name : "output";
      const at::Tensor scale = i < oracle.scales.size() ? oracle.scales[i] : at::Tensor();
      // A static shape unlike the oracle's is the contract gate's finding; a data-dependent length is
      // a value (a stale result of another length fails here; judge_output reports the counts).
      const bool by_data = i < ctx.schema.outputs.size() && ctx.schema.outputs[i].data_dependent();
      if (!by_data && outs[i].sizes() != oracle.outputs[i].sizes()) continue;
      Judgement j = judge_output(oname, outs[i], oracle.outputs[i], scale, expected_output_dtype(ctx.schema, i, c),
                                 tol->second, K);
      if (!j.pass) return Judged{false, j, oname};
    }
    return r;
  }

  // Runs a case, records its operators, fails on a forbidden one or a wrong result.
  GateVerdict check_base(GateContext& ctx, WorkerSession& session, const Case& c, State* st, CaseRun* out) {
    CaseRun run = run_case(ctx, session, c);
    ++st->cases;
    if (run.outcome.kind != Outcome::Kind::Ok) {
      GateVerdict v = verdict_from_outcome(ctx, name(), run);
      v.replay = write_replay(ctx, name(), run, v);
      return v;
    }
    std::vector<std::string> forbidden;
    for (const std::string& op : run.outcome.reply.aten_ops) {
      if (std::find(st->ops.begin(), st->ops.end(), op) == st->ops.end()) st->ops.push_back(op);
      if (std::find(ctx.schema.forbidden_ops.begin(), ctx.schema.forbidden_ops.end(), op) !=
          ctx.schema.forbidden_ops.end())
        forbidden.push_back(op);
    }
    if (!forbidden.empty()) {
      std::string list;
      for (const std::string& f : forbidden) list += (list.empty() ? "" : ", ") + f;
      const std::string whose = is_module_schema(ctx.schema)
                                    ? "the reference Model calls for the same work (its key operator): a fallback to the framework"
                                    : "the " + ctx.schema.name + " schema forbids (the library's own implementation of the op)";
      return fail(ctx, run, Category::WrongResult,
                  "case " + c.label + ": the kernel calls " + list + ", which " + whose +
                      ": it does not compute the result itself",
                  {{"forbidden_ops_called", forbidden}, {"aten_ops", run.outcome.reply.aten_ops}});
    }
    if (!run.outcome.reply.host_copies.empty()) {
      std::vector<std::string> names;
      for (const InputSpec& in : ctx.schema.inputs) names.push_back("'" + in.name + "'");
      nlohmann::json copies = nlohmann::json::array();
      for (const wire::HostCopy& h : run.outcome.reply.host_copies)
        copies.push_back({{"op", h.op}, {"input", h.input}, {"from", h.from}, {"bytes", h.bytes}});
      return fail(ctx, run, Category::WrongResult,
                  "case " + c.label + ": " + provenance_gate::host_copy_message(names, run.outcome.reply.host_copies),
                  {{"host_copies", copies}, {"aten_ops", run.outcome.reply.aten_ops}});
    }
    Judged j = judge(ctx, c, run.outcome.reply.calls.at(0).outputs, run.oracle);
    if (!j.pass)
      return fail(ctx, run, Category::WrongResult, "case " + c.label + ": " + j.j.message,
                  {{"got", j.j.got}, {"expected", j.j.expected}, {"error", j.j.error}, {"allowed", j.j.allowed}});
    if (out) *out = std::move(run);
    GateVerdict v;
    v.name = name();
    return v;
  }

  // Runs `perturbed` (the base case with one element of input `which` changed) right after its base
  // in the same child: its output must match the oracle on the new inputs.
  GateVerdict check_perturbed(GateContext& ctx, WorkerSession& session, const CaseRun& base, const Case& perturbed,
                              size_t which, State* st) {
    CaseRun run = run_case(ctx, session, perturbed);
    ++st->cases;
    if (run.outcome.kind != Outcome::Kind::Ok) {
      GateVerdict v = verdict_from_outcome(ctx, name(), run);
      v.replay = write_replay(ctx, name(), run, v);
      return v;
    }
    const auto& got = run.outcome.reply.calls.at(0).outputs;
    Judged j = judge(ctx, perturbed, got, run.oracle);
    if (j.pass) {
      ++st->followed;
      GateVerdict v;
      v.name = name();
      return v;
    }
    const auto& before = base.outcome.reply.calls.at(0).outputs;
    bool unchanged = before.size() == got.size();
    for (size_t i = 0; unchanged && i < got.size(); ++i)
      unchanged = got[i].sizes() == before[i].sizes() && got[i].dtype() == before[i].dtype() && at::equal(got[i], before[i]);
    const TensorRecipe& r = perturbed.tensors.at(which);
    const auto& [idx, value] = r.specials.back();
    const double old = base.inputs.at(which).contiguous().reshape({-1})[idx].item<double>();
    const std::string change = r.name + index_text(base.inputs.at(which).sizes(), idx) + " from " + number(old) +
                               " to " + number(value);
    const std::string what =
        unchanged ? "the output did not change at all when " + change +
                        " (the reference did): the result ignores that input or comes from a cache keyed on part of it"
                  : "after " + change + " the output is wrong: " + j.j.message;
    return fail(ctx, run, Category::WrongResult, "case " + perturbed.label + ": " + what,
                {{"input", r.name}, {"flat_index", idx}, {"old", old}, {"new", value}, {"output_unchanged", unchanged},
                 {"got", j.j.got}, {"expected", j.j.expected}});
  }

  // The base case, then single-element changes of each floating input that the reference notices.
  GateVerdict check_case(GateContext& ctx, WorkerSession& session, const Case& c, uint64_t seed, State* st) {
    CaseRun base;
    GateVerdict v = check_base(ctx, session, c, st, &base);
    if (v.status != Status::Pass) return v;
    for (size_t t = 0; t < c.tensors.size(); ++t) {
      const TensorRecipe& r = c.tensors[t];
      const int64_t n = base.inputs[t].numel();
      const bool index = r.distribution == Distribution::Index;
      if (n == 0 || (index ? r.high - r.low < 2 : !dtype_is_floating(r.dtype))) continue;
      const at::Tensor flat = base.inputs[t].contiguous().reshape({-1}).to(at::kDouble);
      int done = 0;
      for (int attempt = 0; attempt < kPositionsTried && done < kPerturbationsPerInput; ++attempt) {
        // The last element first (a cache keyed on leading elements, a loop that stops short), then random ones.
        const int64_t idx = attempt == 0 ? n - 1 : int64_t(rng::below(seed, 0x50524F56ull + t, uint64_t(attempt), uint64_t(n)));
        Case p = c;
        const double old = flat[idx].item<double>();
        // An index moves to another valid index (a lookup that ignores it, or caches on others, shows).
        const double moved_to =
            index ? double(r.low + (int64_t(old) - r.low + 1 + int64_t(rng::below(seed, 0x49445831ull + t, uint64_t(attempt), uint64_t(r.high - r.low - 1)))) % (r.high - r.low))
                  : perturbed_value(old, r.positive);
        p.tensors[t].specials.push_back({idx, moved_to});
        p.label = c.label + " with " + r.name + "[" + std::to_string(idx) + "] changed";
        // Only changes the reference notices beyond the tolerance are evidence of dependence.
        const std::vector<at::Tensor> inputs = materialize_all(p);
        const OracleResult moved = run_oracle(ctx.schema.oracle, inputs, p.attrs);
        if (!moved.ok() || judge(ctx, p, base.outcome.reply.calls.at(0).outputs, moved).pass) continue;
        ++done;
        GateVerdict pv = check_perturbed(ctx, session, base, p, t, st);
        if (pv.status != Status::Pass) return pv;
      }
    }
    return v;
  }
};

}  // namespace

std::unique_ptr<Gate> make_provenance_gate() { return std::make_unique<ProvenanceGate>(); }

}  // namespace gauntlet
