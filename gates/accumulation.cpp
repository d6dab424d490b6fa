// Gate 9, accumulation: adversarial long reductions judged against an exactly accumulated, once-rounded oracle.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "gauntlet/cases/gate.h"
#include "gauntlet/cases/judge.h"
#include "gauntlet/oracle/module_oracle.h"
#include "gauntlet/common/numerics.h"
#include "gauntlet/oracle/superacc.h"

namespace gauntlet {

// --- What the gate feeds each op (exposed for tests/gates/accumulation_test.cpp). ---
namespace accumulation {

// How a case is judged: the schema's probabilistic sqrt(K) bound (random data), its deterministic
// ceiling ulps*ulp(ref) + ceiling_c*u*K*scale (adversarial data, where rounding errors line up),
// or exactly (integer data: a float32 accumulator makes no rounding error at all there).
enum class Bound { Sqrt, Ceiling, Exact };

struct Plan {
  std::string name;
  std::vector<Distribution> fills;  // per floating input, in schema order (the last one repeats)
  bool narrow_range_only = false;   // partial overflow: only for dtypes whose range is narrower than
                                    // the declared accumulator's (float16 under float32); for float32
                                    // and bfloat16 data a float32 partial sum overflowing is what the
                                    // schema's accumulator allows
  bool integer_extremes = false;    // arithmetic integer operands drawn at the ends of their range
};

// Terms per output element the gate aims for: far past float16's 2^11 and bfloat16's 2^8, so a
// running sum in the input dtype stalls (at 2048 for a sum of ones in float16), yet small enough
// for naive CPU loops to finish in about a second per gate.
constexpr int64_t kTerms = 4096;

// Why an op gets no cases (empty: it does).
std::string skip_reason(const OpSchema& s) {
  if (is_module_schema(s)) return module_skip_reason("accumulation");
  if (!s.reduction) return "elementwise op (no reduction section in the schema): nothing accumulates";
  if (s.oracle == "amax")
    return "a max accumulates no rounding error (every partial result is one of the inputs); its "
           "exactness is judged by the accuracy gate's exact tolerance";
  return "";
}

// The plans of an op, the most decisive first (integer data fails exactly, overflow as inf): the
// first failure is the one reported.
std::vector<Plan> plans_for(const OpSchema& s) {
  using D = Distribution;
  const std::string& op = s.oracle;
  if (!skip_reason(s).empty()) return {};
  if (op == "sum" || op == "mean" || op == "cumsum" || op == "segment_sum" || op == "group_by_sum" || op == "scatter_add")
    return {{"integer-exact", {D::IntegerExact}}, {"partial-overflow", {D::PartialOverflow}, true},
            {"swamp", {D::Swamp}}, {"cancellation", {D::Cancellation}}, {"random", {D::Normal}}};
  // Dot products: the first operand carries the pattern along K, the second is near one, so every
  // output element sees the same adversarial sequence of products.
  if (op == "matmul" || op == "bmm")
    return {{"integer-exact", {D::IntegerExact, D::SmallIntegers}},
            {"partial-overflow", {D::PartialOverflow, D::NearOne}, true}, {"swamp", {D::Swamp, D::NearOne}},
            {"cancellation", {D::Cancellation, D::NearOne}}, {"random", {D::Normal}}};
  if (op == "linear_relu")
    return {{"integer-exact", {D::IntegerExact, D::SmallIntegers, D::IntegerExact}},
            {"partial-overflow", {D::PartialOverflow, D::NearOne, D::Normal}, true},
            {"swamp", {D::Swamp, D::NearOne, D::Normal}}, {"cancellation", {D::Cancellation, D::NearOne, D::Normal}},
            {"random", {D::Normal}}};
  if (op == "conv2d")
    return {{"integer-exact", {D::IntegerExact, D::SmallIntegers, D::IntegerExact}}, {"random", {D::Normal}}};
  if (op == "layer_norm" || op == "rms_norm")
    return {{"large-mean", {D::LargeMean, D::NearOne, D::Normal}}, {"random", {D::Normal}}};
  // int8_matmul: the int8 operands at the ends of their range (IntegerExtremes: -128 and 127), the
  // scales near one, so every product is +-16129..16384 and a 16-bit partial sum overflows at once.
  // fp8_matmul: matmul's plans in float8_e4m3fn's range (max 448), without swamp (its large terms
  // reach 512): integers to 16 and their products are exact in e4m3 and float32, so a float16
  // accumulator fails exactly; partial overflow passes 65504 (float16's max) long before float32's.
  if (op == "fp8_matmul")
    return {{"integer-exact", {D::IntegerExact, D::SmallIntegers}},
            {"partial-overflow", {D::PartialOverflow, D::NearOne}, true},
            {"cancellation", {D::Cancellation, D::NearOne}}, {"random", {D::Normal}}};
  if (op == "int8_matmul") return {{"integer-extremes", {D::NearOne}, false, true}, {"random", {D::NearOne}}};
  // sdpa: near-equal scores spread the attention over every key, values in [1,2): the softmax
  // denominator and P@V are long sums of similar terms.
  if (op == "sdpa") return {{"near-equal", {D::NearEqual, D::NearEqual, D::NearOne}}, {"random", {D::Normal}}};
  // softmax, log_softmax, logsumexp, cross_entropy and any other reduction: near-equal logits.
  return {{"near-equal", {D::NearEqual}}, {"random", {D::Normal}}};
}

// How a case is judged, from its distributions (so a replayed case is judged as it was found).
Bound bound_of(const Case& c) {
  bool random = false, random_seen = false;
  for (const TensorRecipe& r : c.tensors) {
    if (r.distribution == Distribution::IntegerExact) return Bound::Exact;
    // The first floating operand carries the plan's pattern (group_by_sum's int64 keys come first).
    if (r.distribution == Distribution::Normal && !random_seen) random = true;
    if (r.distribution != Distribution::Index) random_seen = true;
  }
  return random ? Bound::Sqrt : Bound::Ceiling;
}

// The multiply-adds a case may cost when equal dims tie the reduced dim to others (a square matmul
// of 512^3 on a CPU kernel: about a second for a naive 16-bit loop; 2048^3 on a GPU, KernelBench's
// own square size).
constexpr int64_t kEqualGroupCpuBudget = int64_t(1) << 27;
constexpr int64_t kEqualGroupGpuBudget = int64_t(1) << 33;

// Dims of the gate's cases: the reduced dim at kTerms, a few rows (32 for the plain reductions,
// whose rows are cheap), every other dim at 1; all clamped to the kernel's contract.
std::map<std::string, int64_t> dims_for(const CaseSpace& space) {
  const OpSchema& s = space.schema();
  std::map<std::string, int64_t> want;
  const std::string& op = s.oracle;
  if (op == "sum" || op == "mean" || op == "cumsum") want = {{"M", 32}, {"N", kTerms}};
  // segment_sum: N rows cut into 4 zipf-sized segments (the largest near 2900 rows), 8 columns
  // (swamp's 8 rungs), so 32 outputs of which the longest segments are the decisive ones.
  else if (op == "segment_sum") want = {{"N", kTerms}, {"S", 4}, {"D", 8}};
  // group_by_sum, scatter_add: N terms over 4 groups (buckets), the keys as the schema spreads
  // them (zipf: the hottest near 2000 terms; all equal: one group of all 4096; sorted runs,
  // uniform, and all distinct past 4 keys: about 1024 each), the pattern laid along the terms.
  else if (op == "group_by_sum") want = {{"N", kTerms}, {"G", 4}};
  else if (op == "scatter_add") want = {{"N", kTerms}, {"V", 4}};
  else if (op == "softmax" || op == "log_softmax" || op == "logsumexp") want = {{"M", 8}, {"N", kTerms}};
  else if (op == "matmul" || op == "linear_relu" || op == "int8_matmul" || op == "fp8_matmul") want = {{"M", 8}, {"N", 8}, {"K", kTerms}};
  else if (op == "bmm") want = {{"B", 2}, {"M", 4}, {"N", 4}, {"K", kTerms}};
  else if (op == "layer_norm" || op == "rms_norm") want = {{"M", 8}, {"D", kTerms}};
  else if (op == "cross_entropy") want = {{"N", 8}, {"C", kTerms}};
  // sdpa: S keys per query (the naive control is O(S^2 D)); conv2d: K = C*3*3 = 2304.
  else if (op == "sdpa") want = {{"S", kTerms / 2}, {"D", 4}};
  else if (op == "conv2d") want = {{"C", 256}, {"H", 4}, {"W", 4}, {"O", 4}, {"KH", 3}, {"KW", 3}};
  // A contract that ties the reduced dim to others (a square-only matmul: M = K = N) would make
  // CaseSpace::build take the smallest size asked of the group, 8 terms: no long reduction at all.
  // The group takes the terms' size instead, as far as a case of its cube stays affordable: a
  // naive CPU kernel, and the float64 oracle, do M*N*K multiply-adds.
  const std::string terms_dim = op == "sum" || op == "mean" || op == "cumsum" || op == "softmax" ||
                                        op == "log_softmax" || op == "logsumexp" || op == "segment_sum" ||
                                        op == "group_by_sum" || op == "scatter_add"
                                    ? "N"
                                : op == "matmul" || op == "linear_relu" || op == "bmm" || op == "int8_matmul" ||
                                          op == "fp8_matmul"
                                      ? "K"
                                : op == "layer_norm" || op == "rms_norm"               ? "D"
                                : op == "cross_entropy" || op == "conv2d"              ? "C"
                                : op == "sdpa"                                         ? "S"
                                                                                       : "";
  for (const auto& group : space.manifest().equal_dims) {
    if (std::find(group.begin(), group.end(), terms_dim) == group.end()) continue;
    const int64_t budget = space.manifest().device == "cpu" ? kEqualGroupCpuBudget : kEqualGroupGpuBudget;
    int64_t rest = 1;  // the dims outside the group
    for (const auto& [d, n] : want)
      if (std::find(group.begin(), group.end(), d) == group.end()) rest *= n;
    int64_t size = want.count(terms_dim) ? want[terms_dim] : kTerms;
    auto cost = [&](int64_t n) {
      double c = double(rest);
      for (const std::string& d : group)
        if (s.dims.count(d)) c *= double(n);
      return c;
    };
    while (size > 1 && cost(size) > double(budget)) size /= 2;
    for (const std::string& d : group) want[d] = size;
  }
  std::map<std::string, int64_t> dims;
  for (const auto& [name, dom] : s.dims) {
    const auto [lo, hi] = space.limits_for(name);
    auto it = want.find(name);
    dims[name] = std::clamp<int64_t>(it == want.end() ? 1 : it->second, std::max<int64_t>(lo, 1), std::max<int64_t>(hi, 1));
  }
  return dims;
}

// A case of one plan and dtype: contiguous inputs, the reduced dim last where the op has a dim
// attribute (unless the manifest fixes it), row patterns laid along that dim.
bool make_case(const CaseSpace& space, const Plan& plan, DType dtype, uint64_t seed,
               const std::map<std::string, int64_t>& dims, Case* c, std::string* why) {
  const OpSchema& s = space.schema();
  AttrMap attrs;
  for (const AttrSpec& a : s.attributes) {
    auto fixed = space.manifest().attrs.find(a.name);
    attrs[a.name] = fixed != space.manifest().attrs.end() ? fixed->second
                    : !a.dim_of.empty()                    ? AttrValue(int64_t(-1))
                                                           : a.default_value;
  }
  if (!space.build(dims, 0, attrs, dtype, plan.fills.front(), seed, c, why)) return false;
  // segment_sum reduces x's rows (dim 0) segment by segment: its patterns lie down the columns.
  int64_t axis = s.oracle == "segment_sum" ? 0 : -1;
  if (s.reduction && !s.reduction->dim_attr.empty()) {
    auto it = attrs.find(s.reduction->dim_attr);
    if (it != attrs.end() && std::holds_alternative<int64_t>(it->second)) axis = std::get<int64_t>(it->second);
  }
  size_t f = 0;
  c->label = std::string(dtype_name(dtype)) + " " + plan.name;
  for (TensorRecipe& r : c->tensors) {
    std::string shape;
    for (size_t k = 0; k < r.shape.size(); ++k) shape += (k ? "," : "") + std::to_string(r.shape[k]);
    c->label += " " + r.name + "=[" + shape + "]";
    if (r.distribution == Distribution::Index || !dtype_is_floating(r.dtype)) {
      // Arithmetic integer operands at the ends of their range (the schema's "integer" values).
      if (plan.integer_extremes && r.distribution == Distribution::Index && r.spread == Spread::Uniform && !r.offsets) {
        r.spread = Spread::Extremes;
        c->label += ":extremes";
      }
      continue;
    }
    r.distribution = plan.fills[std::min(f++, plan.fills.size() - 1)];
    r.layout = "contiguous";
    // The first operand of every dot product here keeps K last (a [M,K], x [M,K], a [B,M,K]).
    r.axis = axis;
    c->label += std::string(":") + distribution_name(r.distribution);
  }
  for (const auto& [k, v] : attrs) c->label += " " + k + "=" + attr_to_string(v);
  return true;
}

// What an error of `err` over K terms of total magnitude `scale` says about the accumulator: a
// K-term sum in a format of unit roundoff u errs by at most about K*u*scale, so err/(K*scale) is
// the smallest u that explains it, compared with float32 (2^-24), float16 (2^-11) and bfloat16
// (2^-8) on a log scale (the boundaries are the geometric midpoints).
std::string implied_accumulator(double err, double scale, int64_t K, DType dtype, double* implied_u) {
  *implied_u = scale > 0 && std::isfinite(err) ? err / (double(std::max<int64_t>(K, 1)) * scale) : INFINITY;
  const double u = *implied_u;
  if (!std::isfinite(u)) return "an intermediate overflowed (or a NaN/Inf appeared) where the exact result is finite";
  char text[64];
  std::snprintf(text, sizeof text, "implied accumulator precision 2^%.1f per term: ", std::log2(u));
  const std::string head = text;
  if (u <= std::ldexp(1.0, -24)) return head + "within a float32 accumulator's worst case; the output rounding is off";
  if (u <= std::ldexp(1.0, -17) * std::sqrt(0.5))
    return head + "beyond a float32 accumulator, well short of a 16-bit one: a few 16-bit roundings (partials "
                  "combined in the input dtype) or a float32 formula that amplifies rounding (a one-pass variance)";
  if (u <= std::ldexp(1.0, -9) * std::sqrt(0.5))
    return head + (dtype == DType::BFloat16 ? "looks like a float16 or bfloat16 accumulator" : "looks like a float16 accumulator");
  if (u <= std::ldexp(1.0, -7) * std::sqrt(0.5)) return head + "looks like a bfloat16 accumulator";
  return head + "worse than a bfloat16 accumulator: terms dropped or overflowed";
}

}  // namespace accumulation

namespace {

using namespace accumulation;

class AccumulationGate : public Gate {
 public:
  std::string name() const override { return "accumulation"; }

  GateVerdict run(GateContext& ctx) override {
    GateVerdict v;
    v.name = name();
    const std::string why_skip = skip_reason(ctx.schema);
    if (!why_skip.empty()) {
      v.status = Status::Skip;
      v.message = why_skip;
      return v;
    }
    GateVerdict failed;
    auto session = open_session(ctx, name(), &failed);
    if (!session) return failed;
    Stats stats;
    const std::vector<Plan> plans = plans_for(ctx.schema);
    for (DType dtype : ctx.space.dtypes()) {
      for (int round = 0; round < ctx.budget; ++round) {
        for (const Plan& plan : plans) {
          if (plan.narrow_range_only && !narrow_range(ctx, dtype)) continue;
          Case c;
          std::string error;
          const uint64_t index = uint64_t(stats.cases);
          const uint64_t seed = ctx.case_seed(name(), index);
          if (!make_case(ctx.space, plan, dtype, seed, dims_for(ctx.space), &c, &error)) {
            stats.unbuilt.push_back(std::string(dtype_name(dtype)) + " " + plan.name + ": " + error);
            continue;
          }
          c.index = index;
          ++stats.cases;
          CaseRun run = run_case(ctx, *session, c);
          GateVerdict cv = judge(ctx, run, &stats);
          if (cv.status == Status::Fail) shrink(ctx, *session, plan, dtype, seed, &run, &cv);
          if (cv.status != Status::Pass) {
            cv.cases = stats.cases;
            if (cv.status != Status::HarnessError) cv.replay = write_replay(ctx, name(), run, cv);
            return cv;
          }
        }
      }
    }
    v.cases = stats.cases;
    v.evidence = {{"cases", stats.cases}, {"evidence_cases", stats.evidence}, {"exact_oracle_cases", stats.exact},
                  {"terms", stats.max_terms}};
    if (stats.exact_gemm.outputs > 0) {
      v.evidence["exact_oracle_elements"] = stats.exact_gemm.outputs;
      v.evidence["exact_oracle_superaccumulated"] = stats.exact_gemm.superaccumulated;
    }
    if (!stats.unbuilt.empty()) v.evidence["cases_not_built"] = stats.unbuilt;
    if (stats.evidence == 0) {
      v.status = Status::HarnessError;
      v.category = Category::HarnessError;
      v.message = stats.cases ? "no generated case had a non-constant reference output: nothing was verified"
                              : "no case could be built within the kernel's contract" +
                                    (stats.unbuilt.empty() ? std::string() : " (" + stats.unbuilt.front() + ")");
      return v;
    }
    v.message = std::to_string(stats.evidence) + " adversarial and random reductions of up to " +
                std::to_string(stats.max_terms) + " terms within the float32-accumulator bounds (" +
                std::to_string(stats.exact) + " against the exact superaccumulated oracle)";
    if (stats.cases > stats.evidence)
      v.message += ", " + std::to_string(stats.cases - stats.evidence) + " vacuous cases not counted";
    return v;
  }

  GateVerdict check_one(GateContext& ctx, const Case& c) override {
    GateVerdict failed;
    auto session = open_session(ctx, name(), &failed);
    if (!session) return failed;
    Stats stats;
    CaseRun run = run_case(ctx, *session, c);
    GateVerdict v = judge(ctx, run, &stats);
    if (v.status != Status::Pass && v.status != Status::HarnessError) v.replay = write_replay(ctx, name(), run, v);
    return v;
  }

 private:
  struct Stats {
    int cases = 0, evidence = 0, exact = 0;
    int64_t max_terms = 0;
    ExactOracleStats exact_gemm;  // the dot-product ops: elements, and those summed term by term
    std::vector<std::string> unbuilt;
  };

  // Greedy shrinking of a failing case: halve one dim at a time (same plan, dtype and seed) while the
  // case still fails, so the report shows the smallest failing size (e.g. how long a row must be, or
  // how many rows, before a fast path with a narrow accumulator is taken). A crash or a pass ends a
  // direction; at most kShrinkSteps extra kernel calls.
  void shrink(GateContext& ctx, WorkerSession& session, const Plan& plan, DType dtype, uint64_t seed, CaseRun* run,
              GateVerdict* verdict) {
    constexpr int kShrinkSteps = 16;
    std::map<std::string, int64_t> dims = run->c.dims;
    int steps = 0;
    for (bool progress = true; progress && steps < kShrinkSteps;) {
      progress = false;
      for (const auto& [d, size] : dims) {
        const int64_t lo = std::max<int64_t>(ctx.space.limits_for(d).first, 1);
        if (size <= lo || steps >= kShrinkSteps) continue;
        std::map<std::string, int64_t> trial = dims;
        trial[d] = std::max(lo, size / 2);
        Case c;
        std::string why;
        if (!make_case(ctx.space, plan, dtype, seed, trial, &c, &why)) continue;
        c.index = run->c.index;
        ++steps;
        CaseRun t = run_case(ctx, session, c);
        Stats scratch;
        GateVerdict v = judge(ctx, t, &scratch);
        if (v.status != Status::Fail) {
          if (t.outcome.kind != Outcome::Kind::Ok) steps = kShrinkSteps;  // the child may be gone
          continue;
        }
        dims = trial;
        *run = std::move(t);
        *verdict = v;
        progress = true;
        break;
      }
    }
    verdict->evidence["shrink_steps"] = steps;
    verdict->evidence["smallest_case"] = run->c.label;
  }

  // The dtype's range is narrower than the accumulator the schema declares (float16 under float32).
  static bool narrow_range(const GateContext& ctx, DType dtype) {
    auto t = ctx.schema.tolerance.find(dtype);
    if (t == ctx.schema.tolerance.end()) return false;
    auto acc = dtype_from_name(t->second.accumulator);
    // Far narrower, not merely smaller: bfloat16's largest finite value is 0.4% below float32's, so a
    // partial sum past it overflows a float32 accumulator too (allowed there); float16's is 2^112 below.
    return acc && dtype_is_floating(*acc) && num::limits(dtype).max_finite * 1024 < num::limits(*acc).max_finite;
  }

  GateVerdict judge(GateContext& ctx, CaseRun& run, Stats* stats) {
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
    const DType dtype = case_dtype(ctx.schema, c);
    auto tol_it = ctx.schema.tolerance.find(dtype);
    if (tol_it == ctx.schema.tolerance.end()) {
      v.status = Status::HarnessError;
      v.category = Category::HarnessError;
      v.message = std::string("the schema declares no tolerance for ") + dtype_name(dtype);
      return v;
    }
    const DType out_dtype = expected_output_dtype(ctx.schema, 0, c);
    // Sums and dot products: the exact superaccumulated result, rounded once, replaces the fp64
    // one. The other ops keep the fp64 oracle: its error (about K*2^-53 relative) is 2^29 times
    // below the float32 ceiling it is judged with, and their float16/bfloat16 failures are
    // errors of order 2^-11..2^-8 (docs/tolerances.md, "Accumulation gate").
    bool exact_oracle = false;
    OracleResult exact = run_exact_oracle(ctx.schema.oracle, run.inputs, c.attrs, out_dtype, &exact_oracle,
                                          ExactPath::Filtered, &stats->exact_gemm);
    if (exact_oracle) {
      if (!exact.ok()) {
        v.status = Status::HarnessError;
        v.category = Category::HarnessError;
        v.message = "the exact oracle rejected a generated case (" + c.label + "): " + exact.error;
        return v;
      }
      run.oracle.outputs.at(0) = exact.outputs.at(0);
      ++stats->exact;
    }
    const int64_t K = reduction_terms(ctx.schema, c);
    stats->max_terms = std::max(stats->max_terms, K);
    const Bound bound = bound_of(c);
    Tolerance tol = tol_it->second;
    if (bound == Bound::Ceiling && tol.mode == "reduction") {
      // c*u*sqrt(K)*scale with c = ceiling_c*sqrt(K) is the schema's hard ceiling ceiling_c*u*K*scale.
      tol.c = (tol.ceiling_c > 0 ? tol.ceiling_c : tol.c) * std::sqrt(double(std::max<int64_t>(K, 1)));
    } else if (bound == Bound::Exact) {
      // Integer data: every product and partial sum is exact in a float32 accumulator, so the result
      // is the exact one rounded once. A mean divides once more: float32 then the dtype may round
      // twice, one ulp.
      tol.mode = ctx.schema.oracle == "mean" ? "ulp" : "exact";
      tol.ulps = ctx.schema.oracle == "mean" ? 1 : 0;
    }
    const wire::CallOutputs& got = run.outcome.reply.calls.at(0);
    bool vacuous = true;
    for (size_t i = 0; i < run.oracle.outputs.size() && i < got.outputs.size(); ++i) {
      const std::string oname = i < ctx.schema.outputs.size() ? ctx.schema.outputs[i].name : "output";
      const at::Tensor scale = i < run.oracle.scales.size() ? run.oracle.scales[i] : at::Tensor();
      Judgement j = judge_output(oname, got.outputs[i], run.oracle.outputs[i], scale,
                                 expected_output_dtype(ctx.schema, i, c), tol, K);
      if (!j.vacuous) vacuous = false;
      if (j.pass) continue;
      double s = NAN;
      if (scale.defined() && j.worst_index >= 0)
        s = scale.to(at::kDouble).contiguous().reshape({-1})[j.worst_index].item<double>();
      double implied_u = 0;
      const std::string looks = implied_accumulator(j.error, s, K, dtype, &implied_u);
      const char* how = bound == Bound::Exact ? "exact" : bound == Bound::Ceiling ? "ceiling" : "sqrt(K)";
      v.status = Status::Fail;
      v.category = Category::WrongResult;
      v.message = "case " + c.label + " (K=" + std::to_string(K) + ", " + how + " bound): " + j.message + "; " + looks;
      v.evidence = {{"got", j.got},           {"expected", j.expected},   {"error", j.error},
                    {"allowed", j.allowed},   {"bad_elements", j.bad},    {"elements", j.checked},
                    {"terms", K},             {"bound", how},             {"nan_inf_mismatches", j.nonfinite_mismatch},
                    {"implied_accumulator", looks}};
      if (std::isfinite(implied_u) && implied_u > 0) {
        v.evidence["implied_unit_roundoff"] = implied_u;
        v.evidence["implied_unit_roundoff_log2"] = std::log2(implied_u);
      }
      return v;
    }
    if (!vacuous) ++stats->evidence;
    return v;
  }
};

}  // namespace

std::unique_ptr<Gate> make_accumulation_gate() { return std::make_unique<AccumulationGate>(); }

}  // namespace gauntlet
