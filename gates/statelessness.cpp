// Gate 8, statelessness: call sequences A, B, A' give each call its own fresh result, and a batch slice's output is the slice of the full batch's.
#include <rapidcheck.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "gauntlet/cases/case_cost.h"
#include "gauntlet/cases/gate.h"
#include "gauntlet/cases/judge.h"
#include "gauntlet/cases/property.h"
#include "statelessness_batch.h"
#include "statelessness_sequence.h"

namespace gauntlet {
namespace {

constexpr const char* kGate = "statelessness";
constexpr int kCasesPerBudget = 16;

// A round trip outside run_case, counted in the gate's timing the way run_case counts its own.
Outcome timed_call(GateContext& ctx, WorkerSession& session, const wire::CaseRequest& req) {
  const auto t0 = std::chrono::steady_clock::now();
  Outcome o = session.call(req);
  ctx.timing.call += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ctx.timing.kernel += o.reply.kernel_seconds;
  return o;
}

using statelessness_gate::batch_inputs;
using statelessness_gate::chosen_patterns;
using statelessness_gate::draw_case;
using statelessness_gate::find_alt;
using statelessness_gate::plan_sequence;
using statelessness_gate::Step;

// Byte-level comparison (NaN payloads and the sign of zero included).
struct Difference {
  int64_t first = -1;
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

std::string output_name(const OpSchema& schema, size_t i) {
  return i < schema.outputs.size() ? schema.outputs[i].name : "output" + std::to_string(i);
}

class StatelessnessGate : public Gate {
 public:
  std::string name() const override { return kGate; }

  GateVerdict run(GateContext& ctx) override {
    int judged = 0, calls = 0, batch_checked = 0;
    const CaseBudget budget = case_budget(ctx.space, kCaseCostCap, kCasesPerBudget);
    auto pick = [&]() {
      Case c;
      RC_PRE(draw_case(ctx.space, budget.cap, &c));
      return c;
    };
    // Passing cases share one child (a child costs more than a sequence); a failure is re-run in a
    // fresh child and that verdict counts, so the stored case replays to it.
    SessionHolder shared(ctx, kGate);
    {
      // A kernel that does not load fails here once, not once per shrink step.
      GateVerdict failed;
      if (!shared.get(&failed)) return failed;
    }
    bool halted = false;  // after a crash or hang: later cases count as passing, which ends shrinking
    auto check = [&](const Case& c) {
      GateVerdict v;
      v.name = kGate;
      if (halted) return v;
      Tally t;
      WorkerSession* s = shared.get(&v);
      if (!s) {
        halted = true;
        return v;
      }
      v = check_sequence(ctx, *s, c, &t);
      if (v.status != Status::Pass && v.status != Status::HarnessError) {
        shared.reset();
        t = Tally{};
        v = check_case(ctx, c, &t);
      }
      if (ends_search(v)) halted = true;
      if (v.status == Status::Pass) {
        ++judged;
        calls += t.calls;
        batch_checked += t.batch ? 1 : 0;
      }
      return v;
    };
    PropertyOutcome p = run_property(ctx, kGate, budget.cases * ctx.budget, pick, check);
    if (p.failed) {
      GateVerdict v = p.verdict;
      v.cases = p.cases + p.shrink_steps;
      if (v.status == Status::Fail) v.message += " (smallest of " + std::to_string(p.shrink_steps) + " shrink steps)";
      v.evidence["shrink_steps"] = p.shrink_steps;
      return v;
    }
    GateVerdict v;
    v.name = kGate;
    v.cases = p.cases;
    if (judged == 0) {
      v.status = Status::HarnessError;
      v.category = Category::HarnessError;
      v.message = "no valid case could be generated from the schema and manifest";
      return v;
    }
    v.message = std::to_string(judged) + " sequences (" + std::to_string(calls) +
                " calls: A, B with new values, attributes and shape, A again) each fresh and correct; " +
                std::to_string(batch_checked) + " batch slices equal to the full batch's rows";
    v.evidence["sequences"] = judged;
    v.evidence["calls"] = calls;
    v.evidence["batch_slices"] = batch_checked;
    if (budget.raised()) {
      v.message += "; " + budget.note();
      v.evidence["case_cost_floor"] = budget.floor;
    }
    return v;
  }

  GateVerdict check_one(GateContext& ctx, const Case& c) override {
    Tally t;
    return check_case(ctx, c, &t);
  }

 private:
  struct Tally {
    int calls = 0;
    bool batch = false;
  };

  static GateVerdict failure(GateContext& ctx, const CaseRun& a_run, const std::string& message, int calls) {
    GateVerdict v;
    v.name = kGate;
    v.cases = 1;
    note_outputs(v, a_run);
    v.status = Status::Fail;
    v.category = Category::WrongResult;
    v.message = "case " + a_run.c.label + ": " + message;
    v.evidence["calls"] = calls;
    v.replay = write_replay(ctx, kGate, a_run, v);
    return v;
  }

  static GateVerdict error_from(GateContext& ctx, const CaseRun& a_run, const CaseRun& failing, const std::string& step) {
    GateVerdict v = verdict_from_outcome(ctx, kGate, failing);
    v.cases = 1;
    v.message = step + ": " + v.message;
    if (v.status != Status::HarnessError) v.replay = write_replay(ctx, kGate, a_run, v);
    return v;
  }

  // The sequence in a fresh child: what a stored case replays, free of earlier cases' state.
  GateVerdict check_case(GateContext& ctx, const Case& a, Tally* tally) {
    GateVerdict failed;
    auto session = open_session(ctx, kGate, &failed);
    if (!session) return failed;
    return check_sequence(ctx, *session, a, tally);
  }

  // The whole sequence A, A, B, A, ... in `session`, then the batch property in the same child.
  GateVerdict check_sequence(GateContext& ctx, WorkerSession& session_ref, const Case& a, Tally* tally) {
    WorkerSession* session = &session_ref;
    const std::vector<Step> steps = plan_sequence(ctx.space, a);
    // Nondeterminism the schema declares is allowed within its tolerance; otherwise repeats are bitwise.
    auto tol_it = ctx.schema.tolerance.find(case_dtype(ctx.schema, a));
    const Tolerance* tol =
        ctx.schema.determinism == "bitwise" || tol_it == ctx.schema.tolerance.end() ? nullptr : &tol_it->second;
    CaseRun a_run = run_case(ctx, *session, a, 2);
    ++tally->calls;
    if (a_run.outcome.kind != Outcome::Kind::Ok) return error_from(ctx, a_run, a_run, "call 1 (A)");
    const wire::CallOutputs& first = a_run.outcome.reply.calls.at(0);
    // The repeat of A inside one request tells whether the kernel hands out the same buffer twice.
    const wire::CallOutputs& repeat = a_run.outcome.reply.calls.at(1);
    for (size_t i = 0; i < repeat.outputs.size(); ++i)
      if (i < repeat.alias_previous_call.size() && repeat.alias_previous_call[i] >= 0 &&
          (i >= repeat.alias_input.size() || repeat.alias_input[i] < 0))
        return failure(ctx, a_run,
                       "call 2 (A repeated) returns " + output_name(ctx.schema, i) +
                           " in the same storage as call 1's output: the caller's earlier result is overwritten by the next call",
                       2);
    if (std::string why = differs(ctx, first, repeat, tol, a_run); !why.empty())
      return failure(ctx, a_run, "call 2 (A repeated) differs from call 1: " + why, 2);
    int call_no = 2;
    for (size_t s = 1; s < steps.size(); ++s) {
      const Step& step = steps[s];
      ++call_no;
      ++tally->calls;
      const std::string label = "call " + std::to_string(call_no) + " (" + step.what + ")";
      if (step.is_a) {
        // A's inputs again, freshly sent (the oracle's answer is call 1's).
        CaseRun again;
        again.c = a;
        wire::CaseRequest req;
        req.case_id = a.index;
        req.args = make_args(ctx.schema, a_run.inputs, a.attrs);
        again.outcome = timed_call(ctx, *session, req);
        again.unmatched = match_to_oracle(ctx, a_run.inputs, a.attrs, a_run.oracle.outputs, again.outcome);
        if (again.outcome.kind != Outcome::Kind::Ok) return error_from(ctx, a_run, again, label);
        if (std::string why = differs(ctx, first, again.outcome.reply.calls.at(0), tol, a_run); !why.empty())
          return failure(ctx, a_run, label + " after " + steps[s - 1].what + " differs from call 1 (A): " + why, call_no);
        continue;
      }
      CaseRun b = run_case(ctx, *session, step.c, 1);
      if (b.outcome.kind == Outcome::Kind::HarnessError) continue;  // the oracle refused the derived case
      if (b.outcome.kind != Outcome::Kind::Ok) return error_from(ctx, a_run, b, label + ", case " + step.c.label);
      std::string wrong = judge(ctx, b);
      if (wrong.empty()) continue;
      // Right when run first in a fresh child: the earlier calls' state made it wrong.
      GateVerdict f2;
      auto fresh = open_session(ctx, kGate, &f2);
      if (!fresh) return f2;
      CaseRun alone = run_case(ctx, *fresh, step.c, 1);
      if (alone.outcome.kind != Outcome::Kind::Ok || !judge(ctx, alone).empty()) continue;  // wrong anyway: accuracy's finding
      return failure(ctx, a_run,
                     label + " after A returns a wrong result, though it is right as the first call of a fresh process: " + wrong +
                         " (B is " + step.c.label + ")",
                     call_no);
    }
    return check_batch(ctx, *session, a_run, call_no, tally);
  }

  // "" when every output of `run` is within the schema tolerance of the oracle.
  static std::string judge(GateContext& ctx, const CaseRun& run) {
    const wire::CallOutputs& got = run.outcome.reply.calls.at(0);
    auto tol = ctx.schema.tolerance.find(case_dtype(ctx.schema, run.c));
    if (tol == ctx.schema.tolerance.end()) return "";
    const int64_t K = reduction_terms(ctx.schema, run.c);
    for (size_t i = 0; i < run.oracle.outputs.size() && i < got.outputs.size(); ++i) {
      // A static shape unlike the oracle's is the contract gate's finding; a data-dependent length is
      // a value (judge_output reports the element counts).
      const bool by_data = i < ctx.schema.outputs.size() && ctx.schema.outputs[i].data_dependent();
      if (!by_data && got.outputs[i].sizes() != run.oracle.outputs[i].sizes()) continue;
      const at::Tensor scale = i < run.oracle.scales.size() ? run.oracle.scales[i] : at::Tensor();
      Judgement j = judge_output(output_name(ctx.schema, i), got.outputs[i], run.oracle.outputs[i], scale,
                                 expected_output_dtype(ctx.schema, i, run.c), tol->second, K);
      if (!j.pass) return j.message;
    }
    return "";
  }

  // "" when `b` repeats `a`: bitwise, or, when the schema declares nondeterminism (`tol` set),
  // within its tolerance of `a`, with the oracle's scale and K of A's run (two runs of a K-term sum
  // in different orders differ by rounding errors of the terms' magnitude, not of the result's).
  static std::string differs(GateContext& ctx, const wire::CallOutputs& a, const wire::CallOutputs& b, const Tolerance* tol,
                             const CaseRun& a_run) {
    if (a.outputs.size() != b.outputs.size())
      return std::to_string(b.outputs.size()) + " outputs instead of " + std::to_string(a.outputs.size());
    for (size_t i = 0; i < a.outputs.size(); ++i) {
      const at::Tensor& x = a.outputs[i];
      const at::Tensor& y = b.outputs[i];
      const std::string oname = output_name(ctx.schema, i);
      if (x.sizes() != y.sizes() || x.scalar_type() != y.scalar_type()) return oname + " changed shape or dtype";
      const Difference d = byte_difference(x, y);
      if (d.first < 0) continue;
      auto dt = wire::from_scalar_type(x.scalar_type());
      if (tol && dt && dtype_is_floating(*dt)) {
        const bool scaled = i < a_run.oracle.scales.size() && a_run.oracle.scales[i].defined() &&
                            a_run.oracle.scales[i].sizes() == x.sizes();
        Judgement j = judge_output(oname, y, x.to(at::kDouble), scaled ? a_run.oracle.scales[i] : at::Tensor(), *dt, *tol,
                                   scaled ? reduction_terms(ctx.schema, a_run.c) : 1);
        if (j.pass) continue;
        return j.message;
      }
      return oname + index_text(x.sizes(), d.first) + " = " + value_text(y, d.first) + " instead of " + value_text(x, d.first) + " (" +
             std::to_string(d.count) + " of " + std::to_string(x.numel()) + " elements differ)";
    }
    return "";
  }

  // The batch property: the kernel on the batch without its first row, and without its last,
  // equals those rows of its output for the whole batch (bitwise for ops without a reduction,
  // within the tolerance otherwise). Two slices shift every row's position in the flat data both
  // ways, so work split by element count (vector tails, tiles) lands differently in each.
  GateVerdict check_batch(GateContext& ctx, WorkerSession& session, const CaseRun& a_run, int call_no, Tally* tally) {
    GateVerdict pass;
    pass.name = kGate;
    pass.cases = 1;
    note_outputs(pass, a_run);
    const Case& a = a_run.c;
    std::string why;
    const size_t alt = find_alt(ctx.space, a);
    const std::vector<bool> slice = batch_inputs(ctx.schema, a, alt, &why);
    if (slice.empty() || a.tensors[0].shape.empty()) return pass;
    const int64_t L = a.tensors[0].shape[0];
    const std::string sym = chosen_patterns(ctx.schema, a, alt)[0][0];
    if (L < 2 || ctx.space.limits_for(sym).first > L - 1) return pass;
    // A dim the contract ties to others (a square matmul's M) has no slice inside the contract.
    for (const auto& group : ctx.manifest.equal_dims)
      if (std::find(group.begin(), group.end(), sym) != group.end()) return pass;
    const wire::CallOutputs& full = a_run.outcome.reply.calls.at(0);
    const bool elementwise = !ctx.schema.reduction.has_value();
    auto tol = ctx.schema.tolerance.find(case_dtype(ctx.schema, a));
    for (const int64_t start : {int64_t(1), int64_t(0)}) {
      const std::string rows = sym + " rows " + std::to_string(start) + ".." + std::to_string(start + L - 2);
      std::vector<at::Tensor> inputs;
      for (size_t k = 0; k < a_run.inputs.size(); ++k)
        inputs.push_back(slice[k] ? a_run.inputs[k].narrow(0, start, L - 1).contiguous() : a_run.inputs[k]);
      wire::CaseRequest req;
      req.case_id = a.index;
      req.args = make_args(ctx.schema, inputs, a.attrs);
      CaseRun part;
      part.c = a;
      part.c.label = a.label + " " + rows;
      part.outcome = timed_call(ctx, session, req);
      // The oracle's answer for those rows alone is its full answer's rows (what the property says).
      std::vector<at::Tensor> part_oracle;
      for (const at::Tensor& o : a_run.oracle.outputs)
        part_oracle.push_back(o.defined() && o.dim() > 0 && o.size(0) == L ? o.narrow(0, start, L - 1) : o);
      part.unmatched = match_to_oracle(ctx, inputs, a.attrs, part_oracle, part.outcome);
      ++call_no;
      ++tally->calls;
      if (part.outcome.kind != Outcome::Kind::Ok)
        return error_from(ctx, a_run, part, "call " + std::to_string(call_no) + " (A's batch, " + rows + ")");
      tally->batch = true;
      const wire::CallOutputs& got = part.outcome.reply.calls.at(0);
      for (size_t i = 0; i < full.outputs.size() && i < got.outputs.size(); ++i) {
        if (full.outputs[i].dim() == 0 || full.outputs[i].size(0) != L) continue;
        const at::Tensor want = full.outputs[i].narrow(0, start, L - 1);
        const at::Tensor& y = got.outputs[i];
        const std::string oname = output_name(ctx.schema, i);
        const std::string head = "the batch property: " + oname + " for " + rows + " alone";
        if (y.sizes() != want.sizes() || y.scalar_type() != want.scalar_type())
          return failure(ctx, a_run, head + " has another shape or dtype than those rows of the full batch's " + oname, call_no);
        const Difference d = byte_difference(y, want);
        if (d.first < 0) continue;
        if (elementwise)
          return failure(ctx, a_run,
                         head + " differs bitwise from the full batch's: " + index_text(y.sizes(), d.first) + " = " +
                             value_text(y, d.first) + " alone, " + value_text(want, d.first) + " in the full batch (" +
                             std::to_string(d.count) + " of " + std::to_string(y.numel()) +
                             " elements differ; an op without a reduction must not depend on the batch)",
                         call_no);
        if (tol == ctx.schema.tolerance.end()) continue;
        at::Tensor scale;
        if (i < a_run.oracle.scales.size() && a_run.oracle.scales[i].defined() && a_run.oracle.scales[i].dim() > 0 &&
            a_run.oracle.scales[i].size(0) == L)
          scale = a_run.oracle.scales[i].narrow(0, start, L - 1);
        Judgement j = judge_output(oname, y, want.to(at::kDouble), scale, expected_output_dtype(ctx.schema, i, a), tol->second,
                                   reduction_terms(ctx.schema, a));
        if (!j.pass) return failure(ctx, a_run, head + " is not within tolerance of the full batch's rows: " + j.message, call_no);
      }
    }
    return pass;
  }
};

}  // namespace

std::unique_ptr<Gate> make_statelessness_gate() { return std::make_unique<StatelessnessGate>(); }

}  // namespace gauntlet
