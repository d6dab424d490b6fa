// Gate 2, accuracy: values from several distributions at typical shapes, under the schema's tolerance.
#include "gauntlet/cases/case_cost.h"
#include "gauntlet/cases/gate.h"
#include "gauntlet/cases/judge.h"

namespace gauntlet {
namespace {

class AccuracyGate : public Gate {
 public:
  std::string name() const override { return "accuracy"; }

  GateVerdict run(GateContext& ctx) override {
    GateVerdict failed;
    auto session = open_session(ctx, name(), &failed);
    if (!session) return failed;
    int cases = 0, evidence = 0;
    const auto dists = accuracy_distributions();
    // At a contract's own large shapes (a KernelBench module's get_inputs()) one round still draws
    // every distribution, each over millions of values; the usual two rounds vary shapes too.
    const CaseBudget budget = case_budget(ctx.space, kCaseCostCap, 2 * int(dists.size()), int(dists.size()));
    const int rounds = (budget.raised() ? 1 : 2) * ctx.budget;
    for (size_t d = 0; d < ctx.space.dtypes().size(); ++d) {
      const DType dtype = ctx.space.dtypes()[d];
      for (int round = 0; round < rounds; ++round) {
        for (size_t k = 0; k < dists.size(); ++k) {
          Case c;
          std::string error;
          const uint64_t index = uint64_t(cases);
          // The variant walks shapes and attributes independently of the distribution.
          const uint64_t variant = uint64_t(round) * dists.size() + k + d;
          if (!ctx.space.typical_case(variant, dtype, dists[k], ctx.case_seed(name(), index), &c, &error)) continue;
          c.index = index;
          bool vacuous = false;
          GateVerdict v = check(ctx, *session, c, &vacuous);
          ++cases;
          if (v.status != Status::Pass) return v;
          if (!vacuous) ++evidence;
        }
      }
    }
    GateVerdict v;
    v.name = name();
    v.cases = cases;
    if (evidence == 0) {
      v.status = Status::HarnessError;
      v.category = Category::HarnessError;
      v.message = "no generated case had a non-constant reference output: nothing was verified";
      return v;
    }
    v.message = std::to_string(evidence) + " cases within tolerance";
    if (cases > evidence) v.message += " (" + std::to_string(cases - evidence) + " vacuous cases not counted)";
    v.evidence["cases"] = cases;
    v.evidence["evidence_cases"] = evidence;
    if (budget.raised()) {
      v.message += "; " + budget.note();
      v.evidence["case_cost_floor"] = budget.floor;
    }
    return v;
  }

  GateVerdict check_one(GateContext& ctx, const Case& c) override {
    GateVerdict failed;
    auto session = open_session(ctx, name(), &failed);
    if (!session) return failed;
    bool vacuous = false;
    return check(ctx, *session, c, &vacuous);
  }

 private:
  GateVerdict check(GateContext& ctx, WorkerSession& session, const Case& c, bool* vacuous) {
    CaseRun run = run_case(ctx, session, c);
    GateVerdict v;
    v.name = name();
    v.cases = 1;
    note_outputs(v, run);
    if (run.outcome.kind != Outcome::Kind::Ok) {
      v = verdict_from_outcome(ctx, name(), run);
      v.cases = 1;
      v.replay = write_replay(ctx, name(), run, v);
      return v;
    }
    const DType case_dtype = gauntlet::case_dtype(c, ctx.schema);
    auto tol_it = ctx.schema.tolerance.find(case_dtype);
    if (tol_it == ctx.schema.tolerance.end()) {
      v.status = Status::HarnessError;
      v.category = Category::HarnessError;
      v.message = std::string("the schema declares no tolerance for ") + dtype_name(case_dtype);
      return v;
    }
    const wire::CallOutputs& got = run.outcome.reply.calls.at(0);
    const int64_t K = reduction_terms(ctx.schema, c);
    *vacuous = true;
    // Output count and shape belong to the contract gate; judge what can be compared.
    for (size_t i = 0; i < run.oracle.outputs.size() && i < got.outputs.size(); ++i) {
      const std::string oname = i < ctx.schema.outputs.size() ? ctx.schema.outputs[i].name : "output";
      const at::Tensor scale = i < run.oracle.scales.size() ? run.oracle.scales[i] : at::Tensor();
      Judgement j = judge_output(oname, got.outputs[i], run.oracle.outputs[i], scale,
                                 expected_output_dtype(ctx.schema, i, c), tol_it->second, K);
      if (!j.vacuous) *vacuous = false;
      if (!j.pass) {
        v.status = Status::Fail;
        v.category = Category::WrongResult;
        v.message = "case " + c.label + ": " + j.message;
        v.evidence = {{"got", j.got}, {"expected", j.expected}, {"error", j.error}, {"allowed", j.allowed},
                      {"bad_elements", j.bad}, {"elements", j.checked}};
        v.replay = write_replay(ctx, name(), run, v);
        return v;
      }
    }
    return v;
  }
};

}  // namespace

std::unique_ptr<Gate> make_accuracy_gate() { return std::make_unique<AccuracyGate>(); }

}  // namespace gauntlet
