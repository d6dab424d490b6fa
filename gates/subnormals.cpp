// Gate 4, subnormals: subnormal and near-threshold values; flushing and overflow as the oracle's rounded result.
#include <rapidcheck.h>

#include <cmath>
#include <functional>
#include <optional>

#include "gauntlet/cases/case_cost.h"
#include "gauntlet/cases/gate.h"
#include "gauntlet/cases/judge.h"
#include "gauntlet/common/numerics.h"
#include "gauntlet/cases/property.h"
#include "gauntlet/common/rng.h"
#include "floating_inputs.h"
#include "special_values_case_shapes.h"  // case shapes shared with the special-values gate

namespace gauntlet {

// --- What the gate feeds each op (exposed for tests/gates/subnormals_test.cpp). ---
namespace subnormals {

// Values mixed into a tensor at a few random positions (recipe specials), on top of its
// distribution.
enum class Mix {
  None,
  Normal,     // N(0,1) values among edge values
  Edge,       // the dtype's thresholds: +-min_subnormal, 2*min_subnormal, largest subnormal,
              // min_normal and the next value up, max_finite and the value below it
  ExpWindow   // x with exp(x) (softmax: exp(x)/K) between min_subnormal/2 and 1.6*min_normal: a
              // correctly rounded result there is subnormal, a flushing exp returns 0
};

struct Fill {
  Distribution base;
  Mix mix = Mix::None;
};

// One declared value of a floating attribute (attribute_plans, below).
struct AttributePlan {
  std::string attr;
  double value = 0;
};

// One assignment of distributions to the op's floating inputs, in schema order.
struct Plan {
  std::vector<Fill> fills;
  bool fp16_only = false;  // NearMax in a sum or dot product: a float32 accumulator fits
                           // float16's range (65504 * K), but float32/bfloat16 values near
                           // max_finite overflow any float32 partial sum, which is the
                           // accumulation gate's adversarial case, not a wrong kernel here
};

const char* mix_name(Mix m) {
  switch (m) {
    case Mix::None: return "";
    case Mix::Normal: return "normal";
    case Mix::Edge: return "thresholds";
    case Mix::ExpWindow: return "exp-underflow";
  }
  return "?";
}

// The plans for an op, most telling first (shrinking moves toward plan 0). Chosen so that a
// correct kernel computing in float32 (max-subtracted exp, two-pass variance, float32 sums) has
// no legitimate overflow or premature underflow:
// - dot products pair subnormals with near-max values (products of order 1: a kernel that treats
//   subnormal inputs as zero loses every term) or near-min-normal values with normal ones (products
//   near the threshold, whose rounding the reduction tolerance's sum|terms| still covers); a
//   subnormal times an O(1) value would round into the subnormal range with an absolute error
//   that no relative bound covers, so that pairing is not used;
// - softmax-like ops get large logits (exp overflows without the max subtracted), softmax and
//   sigmoid also values whose exp is subnormal; the norms get tiny-spread rows around a large
//   mean (a one-pass variance cancels) and subnormal weights (subnormal outputs).
std::vector<Plan> plans_for(const OpSchema& schema) {
  using D = Distribution;
  const Fill sub{D::Subnormal}, nmn{D::NearMinNormal}, big{D::NearMax}, normal{D::Normal};
  const std::string& op = schema.oracle;
  if (op == "relu" || op == "clamp")
    return {{{sub}}, {{nmn}}, {{big}}, {{{D::Normal, Mix::Edge}}}, {{{D::Subnormal, Mix::Normal}}}};
  if (op == "gelu") return {{{sub}}, {{nmn}}, {{big}}, {{{D::Normal, Mix::Edge}}}};
  if (op == "sigmoid")
    return {{{{D::Normal, Mix::ExpWindow}}}, {{sub}}, {{nmn}}, {{big}}, {{{D::Normal, Mix::Edge}}}};
  if (op == "add")
    return {{{sub, sub}},
            {{nmn, nmn}},
            {{big, big}},
            {{{D::Normal, Mix::Edge}, sub}},
            {{{D::Subnormal, Mix::Normal}, nmn}}};
  if (op == "embedding") return {{{sub}}, {{nmn}}, {{big}}, {{{D::Normal, Mix::Edge}}}};
  if (op == "amax")
    return {{{sub}}, {{nmn}}, {{big}}, {{{D::Subnormal, Mix::Normal}}}, {{{D::Normal, Mix::Edge}}}};
  // segment_sum's offsets are integers (no fill): one fill for x, as sum's.
  if (op == "sum" || op == "mean" || op == "cumsum" || op == "segment_sum")
    return {{{sub}}, {{nmn}}, {{{D::Subnormal, Mix::Normal}}}, {{big}, true}};
  if (op == "softmax")
    return {{{{D::LargeLogits}}}, {{{D::Small, Mix::ExpWindow}}}, {{sub}}, {{big}}, {{{D::LargeLogits, Mix::Normal}}}};
  if (op == "log_softmax" || op == "logsumexp")
    return {{{{D::LargeLogits}}}, {{sub}}, {{nmn}}, {{big}}, {{{D::LargeLogits, Mix::Normal}}}};
  if (op == "cross_entropy")
    return {{{{D::LargeLogits}}}, {{sub}}, {{nmn}}, {{{D::LargeLogits, Mix::Normal}}}, {{big}, true}};
  if (op == "layer_norm")
    return {{{{D::TinySpread}, normal, normal}}, {{normal, sub, sub}}, {{sub, normal, sub}},
            {{nmn, normal, nmn}}, {{big, normal, normal}, true}};
  if (op == "rms_norm")
    return {{{{D::TinySpread}, normal}}, {{sub, normal}}, {{normal, sub}}, {{nmn, normal}}, {{big, normal}, true}};
  if (op == "matmul" || op == "bmm")
    return {{{sub, big}}, {{big, sub}}, {{nmn, normal}}, {{normal, nmn}}, {{big, normal}, true}};
  if (op == "linear_relu" || op == "conv2d")
    return {{{sub, big, normal}}, {{big, sub, normal}}, {{nmn, normal, nmn}}, {{normal, nmn, nmn}},
            {{big, normal, normal}, true}};
  if (op == "sdpa")
    return {{{{D::LargeLogits}, normal, normal}}, {{sub, big, nmn}}, {{nmn, normal, nmn}}, {{normal, normal, nmn}}};
  // An op without its own plan: every floating input from each edge distribution in turn. None
  // for an op without floating inputs (unique, hash_join: int64 keys only): there is nothing to
  // place a subnormal in, and the gate skips it (its integer extremes are the key domains' own).
  if (!has_floating_input(schema)) return {};
  size_t nfloat = 0;
  for (const InputSpec& in : schema.inputs)
    if (!is_integer_value_kind(in.values.kind)) ++nfloat;
  auto all = [&](Fill f) { return std::vector<Fill>(std::max<size_t>(1, nfloat), f); };
  if (schema.reduction)
    return {{all(sub)}, {all(nmn)}, {all({D::Subnormal, Mix::Normal})}, {all(big), true}};
  return {{all(sub)}, {all(nmn)}, {all(big)}, {all({D::Normal, Mix::Edge})}};
}

// The value of mixed-in element `k` of tensor `t` (already representable in the dtype).
// `shift` moves the exp window (ln K for softmax: exp(x)/K is the output there).
double mix_value(Mix mix, DType dtype, uint64_t seed, uint64_t t, uint64_t k, double shift) {
  const num::DTypeLimits lim = num::limits(dtype);
  double v = 0;
  switch (mix) {
    case Mix::None: return 0;
    case Mix::Normal: v = rng::normal(seed, 0x7200 + t, k); break;
    case Mix::Edge: {
      const double edges[] = {lim.min_subnormal,
                              2 * lim.min_subnormal,
                              lim.min_normal - lim.min_subnormal,
                              lim.min_normal,
                              lim.min_normal + num::ulp_at(dtype, lim.min_normal),
                              lim.max_finite,
                              lim.max_finite - num::ulp_at(dtype, lim.max_finite)};
      const uint64_t n = sizeof edges / sizeof edges[0];
      const uint64_t pick = rng::below(seed, 0x7300 + t, k, 2 * n);
      v = (pick % 2 ? -1.0 : 1.0) * edges[pick / 2];
      break;
    }
    case Mix::ExpWindow: {
      // ln(min_subnormal) - 0.7 (rounds to 0) up to ln(min_normal) + 0.5 (just normal again).
      const double lo = rng::portable_log(lim.min_subnormal) - 0.7, hi = rng::portable_log(lim.min_normal) + 0.5;
      v = lo + (hi - lo) * rng::uniform01(seed, 0x7400 + t, k) + shift;
      break;
    }
  }
  return num::round_to(dtype, v);
}

// The plans that apply to a dtype (the fp16_only ones only to float16).
std::vector<Plan> plans_for(const OpSchema& schema, DType dtype) {
  std::vector<Plan> plans;
  for (const Plan& p : plans_for(schema))
    if (!p.fp16_only || dtype == DType::Float16) plans.push_back(p);
  return plans;
}

// "2,3,4": a tensor's sizes in a case label.
std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text;
  for (size_t k = 0; k < shape.size(); ++k) text += (k ? "," : "") + std::to_string(shape[k]);
  return text;
}

// Draws a case of one dtype and plan (inside a RapidCheck property): value seed, a list of 1..32
// keys, each mixing one value into every tensor whose plan mixes (its position and value are
// functions of the seed and the key), then shape and attributes. RapidCheck shrinks what was drawn
// first first, and a list by dropping any key: a failure keeps only the mixed-in values it needs,
// then shrinks its shape. Sizes are drawn uniformly from the tiny and typical ones: each plan gets
// only a few cases, and growing sizes slowly (RapidCheck's default) would spend them on
// single-element reductions, which have no variance and no accumulation to get wrong.
Case draw_case(const CaseSpace& space, DType dtype, const Plan& plan) {
  const OpSchema& schema = space.schema();
  const uint64_t seed = pick_seed();
  const std::vector<int64_t> keys = *rc::gen::resize(
      32, rc::gen::nonEmpty(rc::gen::container<std::vector<int64_t>>(
              rc::gen::resize(100, rc::gen::inRange<int64_t>(0, int64_t(1) << 30)))));
  Case c = gate_cases::draw_shaped_case(space, dtype, Distribution::Normal, seed, /*tiny=*/true,
                                        /*uniform_dims=*/true);
  c.label = dtype_name(dtype);
  size_t f = 0;
  for (size_t t = 0; t < c.tensors.size(); ++t) {
    TensorRecipe& r = c.tensors[t];
    const std::string shape = shape_text(r.shape);
    if (r.distribution == Distribution::Index || !dtype_is_floating(r.dtype)) {
      c.label += " " + r.name + "=[" + shape + "]";
      continue;
    }
    const Fill fill = plan.fills[std::min(f++, plan.fills.size() - 1)];
    r.distribution = fill.base;
    c.label += " " + r.name + "=[" + shape + "]:" + distribution_name(fill.base);
    int64_t n = 1;
    for (int64_t s : r.shape) n *= s;
    if (fill.mix == Mix::None || n == 0) continue;
    double shift = 0;
    if (fill.mix == Mix::ExpWindow && schema.oracle == "softmax") {
      const int64_t axis = gate_cases::reduced_axis(schema, c, r);
      if (axis >= 0) shift = rng::portable_log(double(r.shape[size_t(axis)]));
    }
    std::map<int64_t, double> placed;
    // A structured input (a triangular matrix) keeps the mixed-in values: a position its
    // structure zeroes moves to its mirror, else every planted normal value could vanish.
    for (int64_t k : keys)
      placed[structure_position(r, int64_t(rng::below(seed, 0x7100 + t, uint64_t(k), uint64_t(n))))] =
          mix_value(fill.mix, r.dtype, seed, t, uint64_t(k), shift);
    for (const auto& [index, value] : placed) r.specials.push_back({index, value});
    c.label += "+" + std::to_string(placed.size()) + " " + mix_name(fill.mix);
  }
  for (const auto& [k, v] : c.attrs) c.label += " " + k + "=" + attr_to_string(v);
  return c;
}

// An op without a floating input can still return subnormal values, made by a floating attribute
// (dequantize's scale times an integer). Each declared value of a double attribute below the largest
// smallest-normal among the floating outputs' dtypes is a plan of its own, drawn with everything else
// typical; judged strictly, as every case of this gate. The value gates leave results below the
// smallest normal to this gate, so without these a kernel flushing them would pass everywhere.
// An attribute the kernel's contract fixes (`fixed`: the manifest's attrs) keeps its value: its
// plan is that value when it is below the threshold, none otherwise (a module takes it at
// construction and never sees another, so any other value would be charged to it unfairly).
std::vector<AttributePlan> attribute_plans(const OpSchema& schema, const AttrMap& fixed = {}) {
  if (has_floating_input(schema)) return {};
  double threshold = 0;
  for (const OutputSpec& o : schema.outputs)
    if (const auto d = dtype_from_name(o.dtype); d && dtype_is_floating(*d))
      threshold = std::max(threshold, num::limits(*d).min_normal);
  std::vector<AttributePlan> plans;
  for (const AttrSpec& a : schema.attributes) {
    if (a.type != "double") continue;
    const auto pinned = fixed.find(a.name);
    const std::vector<AttrValue> values = pinned == fixed.end() ? a.values : std::vector<AttrValue>{pinned->second};
    for (const AttrValue& v : values)
      if (const double x = attr_as_double(v); x != 0 && std::fabs(x) < threshold) plans.push_back({a.name, x});
  }
  return plans;
}

// A typical case of `dtype` with the plan's attribute at its value (inside a RapidCheck property,
// which shrinks its shape).
Case draw_attribute_case(const CaseSpace& space, DType dtype, const AttributePlan& plan) {
  Case c = gate_cases::draw_shaped_case(space, dtype, Distribution::Normal, pick_seed(), /*tiny=*/true,
                                        /*uniform_dims=*/true);
  c.attrs[plan.attr] = plan.value;
  c.label = dtype_name(dtype);
  for (const TensorRecipe& r : c.tensors) c.label += " " + r.name + "=[" + shape_text(r.shape) + "]";
  for (const auto& [k, v] : c.attrs) c.label += " " + k + "=" + attr_to_string(v);
  return c;
}

}  // namespace subnormals

namespace {

class SubnormalsGate : public Gate {
 public:
  std::string name() const override { return "subnormals"; }

  GateVerdict run(GateContext& ctx) override {
    const std::vector<subnormals::AttributePlan> attribute_plans = subnormals::attribute_plans(ctx.schema, ctx.manifest.attrs);
    if (!has_floating_input(ctx.schema) && attribute_plans.empty()) {
      GateVerdict skip = skip_without_floating_input(name(), "subnormal or near-overflow value");
      // The schema's small values exist but the contract fixes their attribute (every such one).
      if (const auto unpinned = subnormals::attribute_plans(ctx.schema); !unpinned.empty())
        skip.message += "; the kernel's contract fixes " + unpinned[0].attr + " = " +
                        attr_to_string(ctx.manifest.attrs.at(unpinned[0].attr)) + ", which makes no subnormal result";
      return skip;
    }
    Stats stats;
    OneChildCaseCheck check(ctx, name(), [&](const CaseRun& run) { return judge(ctx, run, &stats); });
    // Every plan in every dtype, a few cases each (the first of each at the smallest shape): a
    // random mix would leave some (dtype, plan) pairs untried in a short run.
    // At a contract's own large shapes, each plan once (its case holds millions of elements).
    const CaseBudget budget = case_budget(ctx.space, kCaseCostCap, 4, 1);
    const int per_plan = budget.cases * std::max(1, ctx.budget);
    int cases = 0;
    // One plan's search; a failure's verdict (shrunk, with its replay) when it failed.
    auto search_plan = [&](const std::string& search, const std::function<Case()>& draw) -> std::optional<GateVerdict> {
      PropertyOutcome out = run_property(ctx, search, per_plan, draw, std::ref(check), 150);
      cases += out.cases;
      if (!out.failed) return std::nullopt;
      GateVerdict v = out.verdict;
      v.name = name();
      v.cases = cases;
      v.evidence["cases_before_failure"] = cases;
      v.evidence["shrink_steps"] = out.shrink_steps;
      v.evidence["smallest_case"] = out.smallest.label;
      if (check.last_failure() && v.status != Status::HarnessError)
        v.replay = write_replay(ctx, name(), *check.last_failure(), v);
      return v;
    };
    for (DType dtype : ctx.space.dtypes()) {
      const std::vector<subnormals::Plan> plans = subnormals::plans_for(ctx.schema, dtype);
      for (size_t p = 0; p < plans.size(); ++p)
        if (auto failed = search_plan(name() + "/" + dtype_name(dtype) + "/" + std::to_string(p),
                                      [&] { return subnormals::draw_case(ctx.space, dtype, plans[p]); }))
          return *failed;
      for (size_t p = 0; p < attribute_plans.size(); ++p)
        if (auto failed = search_plan(name() + "/" + dtype_name(dtype) + "/" + attribute_plans[p].attr + std::to_string(p),
                                      [&] { return subnormals::draw_attribute_case(ctx.space, dtype, attribute_plans[p]); }))
          return *failed;
    }
    GateVerdict v;
    v.name = name();
    v.cases = cases;
    v.evidence = {{"cases", cases},
                  {"evidence_cases", stats.evidence_cases},
                  {"subnormal_expected", stats.subnormal_expected},
                  {"overflow_expected", stats.overflow_expected}};
    if (stats.evidence_cases == 0) {
      v.status = Status::HarnessError;
      v.category = Category::HarnessError;
      v.message = "no generated case had a non-constant reference output: nothing was verified";
      return v;
    }
    v.message = std::to_string(stats.evidence_cases) + " cases as the oracle's correctly rounded result (" +
                std::to_string(stats.subnormal_expected) + " subnormal and " + std::to_string(stats.overflow_expected) +
                " overflowed outputs expected)";
    if (cases > stats.evidence_cases)
      v.message += ", " + std::to_string(cases - stats.evidence_cases) + " vacuous cases not counted";
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
    int64_t evidence_cases = 0, subnormal_expected = 0, overflow_expected = 0;
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
    const wire::CallOutputs& got = run.outcome.reply.calls.at(0);
    const int64_t K = reduction_terms(ctx.schema, c);
    // Subnormal results are judged like any other: a kernel that flushes them to zero (or
    // treats subnormal inputs as zero) where the correctly rounded result is nonzero fails,
    // and an Inf or NaN where the rounded result is finite fails on NaN/Inf parity or on
    // the overflow distance.
    JudgeOptions options;
    options.defer_subnormal_range = false;
    bool vacuous = true;
    for (size_t i = 0; i < run.oracle.outputs.size() && i < got.outputs.size(); ++i) {
      const std::string oname = i < ctx.schema.outputs.size() ? ctx.schema.outputs[i].name : "output";
      const DType odtype = expected_output_dtype(ctx.schema, i, c);
      const at::Tensor& ref = run.oracle.outputs[i];
      if (ref.is_floating_point() && dtype_is_floating(odtype)) {
        const num::DTypeLimits lim = num::limits(odtype);
        at::Tensor r = ref.contiguous();
        const double* p = r.data_ptr<double>();
        for (int64_t k = 0; k < r.numel(); ++k) {
          const double w = num::round_to(odtype, p[k]);
          if (w != 0 && std::fabs(w) < lim.min_normal) ++stats->subnormal_expected;
          if (std::isinf(w) && std::isfinite(p[k])) ++stats->overflow_expected;
        }
      }
      const at::Tensor scale = i < run.oracle.scales.size() ? run.oracle.scales[i] : at::Tensor();
      Judgement j = judge_output(oname, got.outputs[i], ref, scale, odtype, tol_it->second, K, options);
      if (!j.vacuous) vacuous = false;
      if (!j.pass) {
        v.status = Status::Fail;
        v.category = Category::WrongResult;
        v.message = "case " + c.label + ": " + j.message;
        v.evidence = {{"got", j.got},         {"expected", j.expected},  {"error", j.error},
                      {"allowed", j.allowed}, {"bad_elements", j.bad},   {"elements", j.checked},
                      {"nan_inf_mismatches", j.nonfinite_mismatch}};
        return v;
      }
    }
    if (!vacuous) ++stats->evidence_cases;
    return v;
  }
};

}  // namespace

std::unique_ptr<Gate> make_subnormals_gate() { return std::make_unique<SubnormalsGate>(); }

}  // namespace gauntlet
