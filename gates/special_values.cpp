// Gate 3, special-values: NaN/Inf at random and adversarial positions; output NaN/Inf as the oracle's.
#include <algorithm>
#include <optional>

#include "gauntlet/cases/case_cost.h"
#include "gauntlet/cases/gate.h"
#include "gauntlet/cases/judge.h"
#include "gauntlet/cases/property.h"
#include "floating_inputs.h"
#include "special_values_placement.h"
#include "special_values_strong_zeros.h"

namespace gauntlet {
namespace {

constexpr int kCases = 30;                 // per --budget
constexpr int kMinCasesAtLargeShapes = 6;  // see run()

class SpecialValuesGate : public Gate {
 public:
  std::string name() const override { return "special-values"; }

  GateVerdict run(GateContext& ctx) override {
    // An op with no floating input (unique, hash_join: int64 keys only) has nowhere to put NaN or
    // Inf, so no case could ever verify their propagation.
    if (!has_floating_input(ctx.schema)) return skip_without_floating_input(name(), "NaN or Inf");
    Stats stats;
    OneChildCaseCheck check(ctx, name(), [&](const CaseRun& run) { return judge(ctx, run, &stats); });
    // At a contract's own large shapes, fewer cases (each still places up to six special values
    // or rows of them, over millions of elements); six keep every kind of placement likely.
    const CaseBudget budget = case_budget(ctx.space, kCaseCostCap, kCases, kMinCasesAtLargeShapes);
    const int max_cases = budget.cases * std::max(1, ctx.budget);
    PropertyOutcome out = run_property(ctx, name(), max_cases, [&] { return special_values::draw_case(ctx.space); },
                                       std::ref(check), 150);
    if (out.failed) {
      GateVerdict v = out.verdict;
      v.name = name();
      v.cases = out.cases;
      v.evidence["cases_before_failure"] = out.cases;
      v.evidence["shrink_steps"] = out.shrink_steps;
      v.evidence["smallest_case"] = out.smallest.label;
      if (check.last_failure() && v.status != Status::HarnessError)
        v.replay = write_replay(ctx, name(), *check.last_failure(), v);
      return v;
    }
    GateVerdict v;
    v.name = name();
    v.cases = out.cases;
    v.evidence = {{"cases", out.cases},
                  {"special_inputs", stats.special_inputs},
                  {"nonfinite_expected", stats.nonfinite_expected},
                  {"finite_expected", stats.finite_expected}};
    if (stats.nan_through_exact_zero > 0) v.evidence["nan_through_exact_zero"] = stats.nan_through_exact_zero;
    if (stats.integer_outputs_of_specials > 0) v.evidence["integer_outputs_of_specials"] = stats.integer_outputs_of_specials;
    if (stats.nonfinite_expected == 0 && stats.integer_outputs_of_specials == 0) {
      // Every reference came out finite: the special values never reached an output, so
      // nothing about their propagation was checked.
      v.status = Status::HarnessError;
      v.category = Category::HarnessError;
      v.message = "no generated case had a NaN or Inf in the reference output: nothing was verified";
      return v;
    }
    v.message = std::to_string(out.cases) + " cases, " + std::to_string(stats.special_inputs) +
                " special input values: NaN/Inf positions and signs as the oracle's (" +
                std::to_string(stats.nonfinite_expected) + " non-finite outputs), finite outputs within tolerance";
    if (stats.integer_outputs_of_specials > 0)
      v.message += "; " + std::to_string(stats.integer_outputs_of_specials) +
                   " special inputs judged through integer outputs (a quantizer saturates +-inf)";
    if (stats.nan_through_exact_zero > 0)
      v.message += "; " + std::to_string(stats.nan_through_exact_zero) +
                   " outputs the reference made NaN only through products with exact zeros were judged with strong "
                   "zeros (0 x NaN = 0 x inf = 0; docs/tolerances.md)";
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
    CaseRun run = run_case(ctx, *session, c);
    Stats stats;
    GateVerdict v = judge(ctx, run, &stats);
    if (v.status != Status::Pass && v.status != Status::HarnessError) v.replay = write_replay(ctx, name(), run, v);
    return v;
  }

 private:
  struct Stats {
    int64_t special_inputs = 0, nonfinite_expected = 0, finite_expected = 0;
    int64_t nan_through_exact_zero = 0;  // accepted: see special_values::nan_through_exact_zero
    int64_t integer_outputs_of_specials = 0;  // special inputs judged through an integer output
  };

  GateVerdict judge(GateContext& ctx, const CaseRun& run, Stats* stats) {
    const Case& c = run.c;
    GateVerdict v;
    v.name = name();
    v.cases = 1;
    note_outputs(v, run);
    if (run.outcome.kind != Outcome::Kind::Ok) {
      GateVerdict e = verdict_from_outcome(ctx, name(), run);
      e.cases = 1;
      return e;
    }
    const DType case_dtype = gauntlet::case_dtype(ctx.schema, c);
    auto tol_it = ctx.schema.tolerance.find(case_dtype);
    if (tol_it == ctx.schema.tolerance.end()) {
      v.status = Status::HarnessError;
      v.category = Category::HarnessError;
      v.message = std::string("the schema declares no tolerance for ") + dtype_name(case_dtype);
      return v;
    }
    for (const TensorRecipe& r : c.tensors) stats->special_inputs += int64_t(r.specials.size());
    const wire::CallOutputs& got = run.outcome.reply.calls.at(0);
    const int64_t K = reduction_terms(ctx.schema, c);
    std::optional<special_values::StrongZeroProbes> probes;
    bool probes_done = false;
    // Output count and shape belong to the contract gate; judge what can be compared.
    for (size_t i = 0; i < run.oracle.outputs.size() && i < got.outputs.size(); ++i) {
      const std::string oname = i < ctx.schema.outputs.size() ? ctx.schema.outputs[i].name : "output";
      const at::Tensor& ref = run.oracle.outputs[i];
      const DType odtype = expected_output_dtype(ctx.schema, i, c);
      if (ref.is_floating_point()) {
        // Count on the rounded reference: a finite fp64 value may round to inf in the dtype.
        at::Tensor rounded = ref.to(*wire::to_scalar_type(odtype));
        const int64_t nonfinite = (~at::isfinite(rounded)).sum().item<int64_t>();
        stats->nonfinite_expected += nonfinite;
        stats->finite_expected += rounded.numel() - nonfinite;
      } else {
        // An integer output (a quantizer's): the special inputs map to finite values (+-inf
        // saturate), judged under the tolerance like the rest; each one placed is evidence.
        for (const TensorRecipe& r : c.tensors) stats->integer_outputs_of_specials += int64_t(r.specials.size());
      }
      const at::Tensor scale = i < run.oracle.scales.size() ? run.oracle.scales[i] : at::Tensor();
      // NaN-ness must match exactly and infinities in sign (judge_output checks those first);
      // finite elements stay under the schema's tolerance. Subnormal differences are the
      // subnormals gate's business, so the default options defer them.
      Judgement j = judge_output(oname, got.outputs[i], ref, scale, odtype, tol_it->second, K);
      if (!j.pass && j.nonfinite_mismatch > 0 && ref.is_floating_point()) {
        // A NaN the reference spreads through an exact zero is not the kernel's to copy: judge
        // those elements against the reference with strong zeros.
        if (!probes_done) {
          probes = special_values::strong_zero_probes(ctx, run);
          probes_done = true;
        }
        bool usable = probes && i < probes->small.outputs.size() && i < probes->nan_large.outputs.size() &&
                      i < probes->huge1.outputs.size() && i < probes->huge2.outputs.size();
        usable = usable && i < probes->flipped.outputs.size();
        // A data-dependent length (a filter's) may differ between the probes: compared element by
        // element, they need the reference's count.
        for (const OracleResult* p : {&probes->small, &probes->nan_large, &probes->huge1, &probes->huge2, &probes->flipped})
          usable = usable && p->outputs[i].numel() == ref.numel();
        if (usable) {
          at::Tensor mask;
          const at::Tensor patched = special_values::strong_zero_reference(
              ref, got.outputs[i], probes->small.outputs[i], probes->nan_large.outputs[i], probes->huge1.outputs[i],
              probes->huge2.outputs[i], probes->flipped.outputs[i], &mask);
          const int64_t accepted = mask.sum().item<int64_t>();
          if (accepted > 0) {
            at::Tensor patched_scale = scale;
            const auto& small_scales = probes->small.scales;
            if (scale.defined() && i < small_scales.size() && small_scales[i].defined())
              patched_scale = at::where(mask, small_scales[i].to(scale.scalar_type()), scale);
            j = judge_output(oname, got.outputs[i], patched, patched_scale, odtype, tol_it->second, K);
            stats->nan_through_exact_zero += accepted;
          }
        }
      }
      if (!j.pass) {
        v.status = Status::Fail;
        v.category = Category::WrongResult;
        v.message = "case " + c.label + ": " + j.message;
        v.evidence = {{"got", j.got},   {"expected", j.expected},           {"bad_elements", j.bad},
                      {"elements", j.checked}, {"nan_inf_mismatches", j.nonfinite_mismatch}};
        return v;
      }
    }
    return v;
  }
};

}  // namespace

std::unique_ptr<Gate> make_special_values_gate() { return std::make_unique<SpecialValuesGate>(); }

}  // namespace gauntlet
