// Gate 6, layouts: non-contiguous inputs (transposed, strided, offset, expanded, channels_last) give the contiguous inputs' result.
#include <rapidcheck.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <set>

#include "gauntlet/cases/case_cost.h"
#include "gauntlet/cases/contract_scope.h"
#include "gauntlet/cases/gate.h"
#include "gauntlet/cases/judge.h"
#include "gauntlet/cases/property.h"

namespace gauntlet {

// Testable pieces (tests/gates/layouts_test.cpp declares them).
namespace layouts_gate {

// The layouts of `in` that make a real difference for a tensor of this shape (a transposed
// [M,1] or an expanded [1,N] has contiguous strides and proves nothing). A structured matrix
// (triangular, symmetric, diagonal) is never expanded along its rows: equal rows would break the
// structure the contract promises, so a kernel relying on it would be judged outside its promise.
std::vector<std::string> effective_layouts(const InputSpec& in, const std::vector<int64_t>& shape,
                                           const std::string& structure) {
  const size_t rank = shape.size();
  int64_t numel = 1;
  for (int64_t s : shape) numel *= s;
  std::vector<std::string> out;
  for (const std::string& l : in.layouts) {
    bool ok = false;
    if (l == "transposed") ok = rank >= 2 && shape[rank - 1] >= 2 && shape[rank - 2] >= 2;
    else if (l == "strided") ok = rank >= 1 && numel >= 2;
    else if (l == "offset") ok = rank >= 1 && numel >= 1;
    else if (l == "expanded") ok = rank >= 1 && shape[0] >= 2 && !(rank == 2 && !structure.empty());
    else if (l == "channels_last") ok = rank == 4 && shape[1] >= 2 && shape[2] * shape[3] >= 2;
    if (ok) out.push_back(l);
  }
  return out;
}

}  // namespace layouts_gate

namespace {

using layouts_gate::effective_layouts;

constexpr const char* kGate = "layouts";
constexpr int kCasesPerBudget = 40;
// Layout bugs show at any size above one element per dim; small shapes keep a case to a few ms.
constexpr int64_t kSizeCap = 64;

// A round trip outside run_case, counted in the gate's timing the way run_case counts its own.
Outcome timed_call(GateContext& ctx, WorkerSession& session, const wire::CaseRequest& req) {
  const auto t0 = std::chrono::steady_clock::now();
  Outcome o = session.call(req);
  ctx.timing.call += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ctx.timing.kernel += o.reply.kernel_seconds;
  return o;
}

std::vector<int64_t> small_sizes(const CaseSpace& space, const std::string& dim) {
  return small_dim_sizes(space, dim, kSizeCap);
}

// Draws dims (uniformly over the candidates), shape alternative, dtype, attributes and seed; false
// when the schema's constraints or the cost cap reject the combination (the caller discards it).
bool draw_case(const CaseSpace& space, int64_t cost_cap, Case* out) {
  const OpSchema& schema = space.schema();
  if (space.dtypes().empty()) return false;
  std::map<std::string, int64_t> dims;
  for (const auto& [name, domain] : schema.dims) {
    const std::vector<int64_t> c = small_sizes(space, name);
    dims[name] = c[size_t(draw_uniform(int64_t(c.size())))];
  }
  const size_t nalt = schema.inputs.empty() ? 1 : schema.inputs[0].shapes.size();
  const size_t alt = size_t(draw_uniform(int64_t(nalt)));
  const DType dtype = space.dtypes()[size_t(draw_uniform(int64_t(space.dtypes().size())))];
  const AttrMap attrs = draw_attrs(space, alt);
  const uint64_t seed = pick_seed();
  std::string error;
  if (!space.build(dims, alt, attrs, dtype, Distribution::Normal, seed, out, &error)) return false;
  return case_cost(schema, *out) <= cost_cap;
}

// Byte-level comparison of two outputs (NaN payloads and the sign of zero included).
struct Difference {
  int64_t first = -1;  // flat index of the first differing element, -1: identical
  int64_t count = 0;
};
Difference byte_difference(const at::Tensor& a, const at::Tensor& b) {
  Difference d;
  const at::Tensor x = a.contiguous(), y = b.contiguous();
  const size_t es = size_t(x.element_size());
  const char* p = static_cast<const char*>(x.data_ptr());
  const char* q = static_cast<const char*>(y.data_ptr());
  for (int64_t i = 0; i < x.numel(); ++i)
    if (std::memcmp(p + size_t(i) * es, q + size_t(i) * es, es) != 0) {
      if (d.first < 0) d.first = i;
      ++d.count;
    }
  return d;
}

std::string value_text(const at::Tensor& t, int64_t flat) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", t.reshape({-1})[flat].item<double>());
  return buf;
}

std::string shape_text(at::IntArrayRef s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? "," : "") + std::to_string(s[i]);
  return t + "]";
}

std::string layouts_contract(const KernelManifest& m) {
  std::string s;
  for (const std::string& l : m.layouts) s += (s.empty() ? "" : ", ") + l;
  return "layouts " + (s.empty() ? std::string("any") : s);
}

std::string layouts_text(const Case& c) {
  std::string s;
  for (const TensorRecipe& r : c.tensors)
    if (r.layout != "contiguous") s += (s.empty() ? "" : ",") + r.name + "=" + r.layout;
  return s.empty() ? "all contiguous" : s;
}

class LayoutsGate : public Gate {
 public:
  std::string name() const override { return kGate; }

  GateVerdict run(GateContext& ctx) override {
    SessionHolder holder(ctx, kGate);
    {
      // A kernel that does not load fails here once, not once per shrink step.
      GateVerdict failed;
      if (!holder.get(&failed)) return failed;
    }
    std::map<std::string, int> exercised;  // layout name -> cases that used it (before any failure)
    int configurations = 0, single = 0, all = 0;  // cases; with one input non-contiguous; with every input
    int refused = 0;  // cases outside the kernel's contract that it refused (as it may)
    const CaseBudget budget = case_budget(ctx.space, kCaseCostCap, kCasesPerBudget);
    auto pick = [&]() {
      Case c;
      RC_PRE(draw_case(ctx.space, budget.cap, &c));
      // Per input: contiguous or not (shrinking toward contiguous, so a failure ends with the
      // fewest non-contiguous inputs), then which of the schema's layouts (shrinking toward the
      // first). Half the inputs are non-contiguous on average: cases mix one input alone, some,
      // and all at once. A layout that changes nothing at this shape leaves the input contiguous.
      bool any = false;
      for (size_t i = 0; i < c.tensors.size() && i < ctx.schema.inputs.size(); ++i) {
        std::vector<std::string> allowed;
        for (const std::string& l : ctx.schema.inputs[i].layouts)
          if (l != "contiguous") allowed.push_back(l);
        if (allowed.empty()) continue;
        const bool active = draw_uniform(2) == 1;
        const std::string& layout = allowed[size_t(draw_uniform(int64_t(allowed.size())))];
        const auto effective = effective_layouts(ctx.schema.inputs[i], c.tensors[i].shape, c.tensors[i].structure);
        if (!active || std::find(effective.begin(), effective.end(), layout) == effective.end()) continue;
        c.tensors[i].layout = layout;
        any = true;
      }
      RC_PRE(any);
      c.label += " layouts " + layouts_text(c);
      return c;
    };
    bool halted = false;  // after a crash or hang: later cases count as passing, which ends shrinking
    auto check = [&](const Case& c) {
      GateVerdict v;
      v.name = kGate;
      if (halted) return v;
      WorkerSession* s = holder.get(&v);
      if (!s) {
        halted = true;
        return v;
      }
      v = check_case(ctx, *s, c);
      if (ends_search(v)) {
        holder.reset();
        halted = true;
      }
      if (v.status == Status::Pass && v.evidence.value("refused_outside_contract", false)) {
        ++refused;
      } else if (v.status == Status::Pass) {
        ++configurations;
        int non_contiguous = 0;
        for (const TensorRecipe& r : c.tensors) {
          if (r.layout == "contiguous") continue;
          ++exercised[r.layout];
          ++non_contiguous;
        }
        single += non_contiguous == 1;
        all += c.tensors.size() > 1 && non_contiguous == int(c.tensors.size());
      }
      return v;
    };
    PropertyOutcome p = run_property(ctx, kGate, budget.cases * ctx.budget, pick, check);
    if (p.failed) {
      GateVerdict v = p.verdict;
      v.cases = p.cases + p.shrink_steps;
      if (v.status == Status::Fail)
        v.message += " (smallest of " + std::to_string(p.shrink_steps) + " shrink steps)";
      v.evidence["shrink_steps"] = p.shrink_steps;
      return v;
    }
    GateVerdict v;
    v.name = kGate;
    v.cases = p.cases;
    if (configurations == 0 && refused > 0) {
      v.message = std::to_string(refused) + " layout cases, all outside the kernel's contract (" +
                  layouts_contract(ctx.manifest) + "), refused cleanly, as it may";
      v.evidence["refused_outside_contract"] = refused;
      return v;
    }
    if (configurations == 0) {
      v.status = Status::HarnessError;
      v.category = Category::HarnessError;
      v.message = "no non-contiguous layout could be generated from the schema and manifest";
      return v;
    }
    std::string list;
    for (const auto& [l, n] : exercised) list += (list.empty() ? "" : ", ") + l + " x" + std::to_string(n);
    v.message = std::to_string(configurations) + " layout cases (" + list + "; " + std::to_string(single) +
                " with one input non-contiguous" + (ctx.schema.inputs.size() > 1 ? ", " + std::to_string(all) + " with all" : "") +
                ") give the contiguous inputs' result";
    if (refused > 0) {
      v.message += "; " + std::to_string(refused) + " outside the kernel's contract refused cleanly";
      v.evidence["refused_outside_contract"] = refused;
    }
    v.evidence["layouts"] = exercised;
    v.evidence["one_input_cases"] = single;
    v.evidence["all_inputs_cases"] = all;
    if (budget.raised()) {
      v.message += "; " + budget.note();
      v.evidence["case_cost_floor"] = budget.floor;
    }
    return v;
  }

  GateVerdict check_one(GateContext& ctx, const Case& c) override {
    GateVerdict failed;
    auto session = open_session(ctx, kGate, &failed);
    if (!session) return failed;
    return check_case(ctx, *session, c);
  }

 private:
  // Runs the kernel on the case's layouts and on contiguous copies of the same values, then
  // compares the two results with each other and with the oracle.
  GateVerdict check_case(GateContext& ctx, WorkerSession& session, const Case& c) {
    GateVerdict v;
    v.name = kGate;
    v.cases = 1;
    CaseRun run;
    run.c = c;
    note_case_scope(ctx, c);
    const auto t0 = std::chrono::steady_clock::now();
    run.inputs = materialize_all(c);
    const auto t1 = std::chrono::steady_clock::now();
    run.oracle = run_oracle(ctx.schema.oracle, run.inputs, c.attrs);
    ctx.timing.inputs += std::chrono::duration<double>(t1 - t0).count();
    ctx.timing.oracle += std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
    if (!run.oracle.ok()) {
      v.status = Status::HarnessError;
      v.category = Category::HarnessError;
      v.message = "the oracle rejected a generated case (" + c.label + "): " + run.oracle.error;
      return v;
    }
    // The reference call: the same logical values (for "expanded", the broadcast rows) in
    // freshly allocated contiguous tensors.
    std::vector<at::Tensor> contiguous;
    for (const at::Tensor& t : run.inputs) contiguous.push_back(t.contiguous().clone());
    wire::CaseRequest base;
    base.case_id = c.index;
    base.args = make_args(ctx.schema, contiguous, c.attrs);
    CaseRun base_run;
    base_run.c = c;
    base_run.c.label = c.label + " (contiguous copies)";
    for (TensorRecipe& r : base_run.c.tensors) r.layout = "contiguous";
    base_run.outcome = timed_call(ctx, session, base);
    base_run.unmatched = match_to_oracle(ctx, contiguous, c.attrs, run.oracle.outputs, base_run.outcome);
    if (base_run.outcome.kind != Outcome::Kind::Ok) {
      v = verdict_from_outcome(ctx, kGate, base_run);
      v.cases = 1;
      v.replay = write_replay(ctx, kGate, run, v);
      return v;
    }
    wire::CaseRequest req;
    req.case_id = c.index;
    req.args = make_args(ctx.schema, run.inputs, c.attrs);
    run.outcome = timed_call(ctx, session, req);
    run.unmatched = match_to_oracle(ctx, run.inputs, c.attrs, run.oracle.outputs, run.outcome);
    note_outputs(v, run);
    if (run.outcome.kind != Outcome::Kind::Ok) {
      v = verdict_from_outcome(ctx, kGate, run);
      v.cases = 1;
      if (v.status == Status::Pass) return v;  // refused outside its contract
      v.message += " (the same values in contiguous tensors were accepted)";
      v.replay = write_replay(ctx, kGate, run, v);
      return v;
    }
    v.message = compare(ctx, run, base_run.outcome.reply.calls.at(0), &v.evidence);
    if (!v.message.empty()) {
      v.status = Status::Fail;
      v.category = Category::WrongResult;
      v.message = "case " + c.label + ": " + v.message;
      v.replay = write_replay(ctx, kGate, run, v);
    }
    return v;
  }

  // "" when the layout run matches: bitwise for elementwise ops (no reduction: nothing may change),
  // within the schema tolerance against the oracle otherwise (accumulation order may change).
  std::string compare(GateContext& ctx, const CaseRun& run, const wire::CallOutputs& base, nlohmann::json* evidence) {
    const wire::CallOutputs& got = run.outcome.reply.calls.at(0);
    const std::string layouts = layouts_text(run.c);
    if (got.outputs.size() != base.outputs.size())
      return "with " + layouts + " the kernel returns " + std::to_string(got.outputs.size()) + " outputs, with contiguous inputs " +
             std::to_string(base.outputs.size());
    const bool elementwise = !ctx.schema.reduction.has_value();
    const DType case_dtype = gauntlet::case_dtype(ctx.schema, run.c);
    auto tol = ctx.schema.tolerance.find(case_dtype);
    const int64_t K = reduction_terms(ctx.schema, run.c);
    for (size_t i = 0; i < got.outputs.size(); ++i) {
      const std::string oname = i < ctx.schema.outputs.size() ? ctx.schema.outputs[i].name : "output" + std::to_string(i);
      const at::Tensor& a = got.outputs[i];
      const at::Tensor& b = base.outputs[i];
      if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type())
        return oname + " with " + layouts + " is " + std::string(c10::toString(a.scalar_type())) + shape_text(a.sizes()) +
               ", with the same values contiguous " + std::string(c10::toString(b.scalar_type())) + shape_text(b.sizes());
      const Difference d = byte_difference(a, b);
      const int64_t diff = d.first;
      if (elementwise && diff >= 0) {
        *evidence = {{"index", diff}, {"with_layout", value_text(a, diff)}, {"contiguous", value_text(b, diff)},
                     {"differing_elements", d.count}, {"elements", a.numel()}};
        return oname + index_text(a.sizes(), diff) + " = " + value_text(a, diff) + " with these layouts, " +
               value_text(b, diff) + " with the same values contiguous (" + std::to_string(d.count) + " of " +
               std::to_string(a.numel()) + " elements differ; an elementwise op must match bitwise)";
      }
      // Judging against the oracle needs its shape: a wrong shape is the contract gate's finding.
      if (i >= run.oracle.outputs.size() || a.sizes() != run.oracle.outputs[i].sizes() || tol == ctx.schema.tolerance.end())
        continue;
      const at::Tensor scale = i < run.oracle.scales.size() ? run.oracle.scales[i] : at::Tensor();
      const DType odt = expected_output_dtype(ctx.schema, i, run.c);
      Judgement ja = judge_output(oname, a, run.oracle.outputs[i], scale, odt, tol->second, K);
      if (ja.pass) continue;
      Judgement jb = judge_output(oname, b, run.oracle.outputs[i], scale, odt, tol->second, K);
      // Wrong in the same way with contiguous inputs: an accuracy finding, not a layout one.
      if (!jb.pass && diff < 0) continue;
      *evidence = {{"got", ja.got}, {"expected", ja.expected}, {"error", ja.error}, {"allowed", ja.allowed},
                   {"bad_elements", ja.bad}, {"elements", ja.checked}, {"contiguous_inputs_pass", jb.pass}};
      return ja.message +
             (jb.pass ? " (the same values in contiguous tensors are within tolerance)" : " (differs from the contiguous inputs' output)");
    }
    return "";
  }
};

}  // namespace

std::unique_ptr<Gate> make_layouts_gate() { return std::make_unique<LayoutsGate>(); }

}  // namespace gauntlet
