// Element-wise judging against the oracle: NaN/Inf parity first, then the schema's tolerance mode.
#include "gauntlet/cases/judge.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "gauntlet/common/numerics.h"

namespace gauntlet {
namespace {

double unit_roundoff_of(const std::string& accumulator) {
  auto d = dtype_from_name(accumulator);
  return num::limits(d && dtype_is_floating(*d) ? *d : DType::Float32).unit_roundoff;
}

std::string fmt(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// Integer outputs are compared as float64 values (every int8..int32 value, and int64 up to 2^53,
// is exact there): round_to and ulp_at are the identity and double's, so a mode judges them exactly.
DType judged_as(DType d) { return dtype_is_floating(d) ? d : DType::Float64; }

}  // namespace

std::string index_text(at::IntArrayRef sizes, int64_t flat) {
  if (sizes.empty()) return "[]";
  std::vector<int64_t> idx(sizes.size());
  for (int64_t d = int64_t(sizes.size()) - 1; d >= 0; --d) {
    const int64_t s = std::max<int64_t>(1, sizes[d]);
    idx[d] = flat % s;
    flat /= s;
  }
  std::string out = "[";
  for (size_t i = 0; i < idx.size(); ++i) out += (i ? "," : "") + std::to_string(idx[i]);
  return out + "]";
}

double allowed_error(DType dtype_in, const Tolerance& tol, double ref, double scale, int64_t K) {
  const DType dtype = judged_as(dtype_in);
  if (tol.mode == "quantize-rounding") return std::isfinite(scale) ? std::fabs(scale) : 0;
  const double rounded = num::round_to(dtype, ref);
  const double one_ulp = num::ulp_at(dtype, std::isfinite(rounded) ? rounded : num::limits(dtype).max_finite);
  if (tol.mode == "exact") return 0;
  if (tol.mode == "ulp") return tol.ulps * one_ulp;
  // reduction: output rounding plus an accumulation bound growing like sqrt(K).
  const double u = unit_roundoff_of(tol.accumulator);
  const double s = std::isfinite(scale) ? scale : std::fabs(ref);
  return tol.ulps * one_ulp + tol.c * u * std::sqrt(double(std::max<int64_t>(K, 1))) * s;
}

namespace {

// Whether the reference proves nothing about the kernel: all zero, or constant over several
// elements (a single nonzero element is still evidence).
// Integer outputs (sort's permuted values, indices, counts) are the oracle's integers themselves:
// no rounding, and compared exactly whatever the case dtype's tolerance says.
double rounded(DType dtype, double v) { return dtype_is_floating(dtype) ? num::round_to(dtype, v) : v; }

bool reference_is_vacuous(DType dtype, const double* r, int64_t n) {
  bool constant = true;
  double first = n ? rounded(dtype, r[0]) : 0;
  for (int64_t i = 1; i < n && constant; ++i) {
    double v = rounded(dtype, r[i]);
    if (!(v == first || (std::isnan(v) && std::isnan(first)))) constant = false;
  }
  bool all_zero = true;
  for (int64_t i = 0; i < n && all_zero; ++i) all_zero = r[i] == 0;
  return n == 0 || all_zero || (n > 1 && constant);
}

// One chunk's counts and its worst element.
struct Partial {
  int64_t bad = 0, nonfinite_mismatch = 0, unjudged = 0, worst_index = -1;
  double worst_ratio = -1, got = 0, expected = 0, error = 0, allowed = 0;
};

// What every element's verdict needs. The mode's strings are compared once, not per element.
struct ElementRule {
  enum class Mode { Exact, Ulp, Bound, Candidates };
  DType dtype;
  const Tolerance& tol;
  const JudgeOptions& options;
  bool floating = dtype_is_floating(dtype);
  num::DTypeLimits lim = num::limits(floating ? dtype : DType::Float64);
  // An integer output is exact unless its tolerance names its own rule (quantize-rounding).
  Mode mode = tol.mode == "quantize-rounding"   ? Mode::Candidates
              : !floating || tol.mode == "exact" ? Mode::Exact
              : tol.mode == "ulp"                ? Mode::Ulp
                                                 : Mode::Bound;
  bool envelope = tol.mode == "module-envelope";
  // allowed_error's accumulation term without its per-element string work: the same operations
  // in the same order, so the same doubles.
  double accumulation;
  double overflow_step = floating ? num::ulp_at(dtype, lim.max_finite) : 0;

  ElementRule(DType d, const Tolerance& t, int64_t K, const JudgeOptions& opts)
      : dtype(d), tol(t), options(opts),
        accumulation(t.c * unit_roundoff_of(t.accumulator) * std::sqrt(double(std::max<int64_t>(K, 1)))) {}

  // Judges element i (kernel value o[i], reference r[i], scale s[i] when s) into chunk q.
  void judge(int64_t i, const double* o, const double* r, const double* s, Partial& q) const {
    // The module oracle's envelope leaves elements unjudged (an infinite scale) where the
    // framework's own Model in this dtype has no answer (docs/modules.md, "module-envelope").
    if (s && envelope && std::isinf(s[i])) {
      ++q.unjudged;
      return;
    }
    const double want = rounded(dtype, r[i]);
    const double got = o[i];
    bool bad = false;
    double err = 0, allowed = 0;
    if (std::isnan(want) || std::isnan(got)) {
      bad = std::isnan(want) != std::isnan(got);
      if (bad) ++q.nonfinite_mismatch;
      err = bad ? INFINITY : 0;
    } else if (std::isinf(got) && std::isinf(want)) {
      bad = (got > 0) != (want > 0);
      if (bad) ++q.nonfinite_mismatch;
      err = bad ? INFINITY : 0;
    } else if (mode == Mode::Exact) {
      bad = got != want && !(got == 0 && want == 0);
      err = std::fabs(got - want);
    } else if (mode == Mode::Candidates) {
      // quantize-rounding: the reference, or the one other admissible result the oracle names as
      // its offset in `scales` (docs/tolerances.md): nothing in between, nothing beyond.
      const double other = s && std::isfinite(s[i]) ? s[i] : 0;
      bad = got != want && !(other != 0 && got == want + other);
      err = std::fabs(got - want);
      allowed = std::fabs(other);
    } else if (mode == Mode::Ulp) {
      const uint64_t d = num::ulp_distance(dtype, got, want);
      err = double(d);
      allowed = tol.ulps;
      bad = err > allowed;
      if (bad && std::isinf(got)) ++q.nonfinite_mismatch;
    } else {
      // Overflow: an infinite output counts as one step past max_finite (IEEE's threshold), so a
      // result that legitimately rounded to inf is not measured as infinitely far away.
      const double g = std::isinf(got) ? std::copysign(lim.max_finite + overflow_step, got) : got;
      const double w = std::isinf(r[i]) ? std::copysign(lim.max_finite + overflow_step, r[i]) : r[i];
      err = std::fabs(g - w);
      // allowed_error(dtype, tol, r[i], scale, K) for a reduction-style mode:
      const double one_ulp = num::ulp_at(dtype, std::isfinite(want) ? want : lim.max_finite);
      const double scale = s ? s[i] : NAN;
      allowed = tol.ulps * one_ulp + accumulation * (std::isfinite(scale) ? scale : std::fabs(r[i]));
      bad = !(err <= allowed);
      if (bad && std::isinf(got) != std::isinf(want)) ++q.nonfinite_mismatch;
    }
    if (bad && floating && options.defer_subnormal_range && std::isfinite(got) && std::isfinite(want) &&
        std::fabs(got) < lim.min_normal && std::fabs(want) < lim.min_normal)
      bad = false;
    if (!bad) return;
    ++q.bad;
    const double ratio = std::isinf(err) ? INFINITY : (allowed > 0 ? err / allowed : err + 1);
    if (ratio > q.worst_ratio) {
      q.worst_ratio = ratio;
      q.worst_index = i;
      q.got = got;
      q.expected = want;
      q.error = err;
      q.allowed = allowed;
    }
  }
};

// Every element's verdict is a pure function of its own values, so chunks are judged in parallel
// and merged in index order (merge_partials).
std::vector<Partial> judge_chunks(const ElementRule& rule, const double* o, const double* r, const double* s,
                                  int64_t n) {
  constexpr int64_t kChunk = int64_t(1) << 16;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<Partial> partials(size_t(std::max<int64_t>(chunks, 0)));
  at::parallel_for(0, chunks, 1, [&](int64_t first_chunk, int64_t last_chunk) {
    for (int64_t chunk = first_chunk; chunk < last_chunk; ++chunk) {
      Partial& q = partials[size_t(chunk)];
      for (int64_t i = chunk * kChunk, stop = std::min(n, i + kChunk); i < stop; ++i) rule.judge(i, o, r, s, q);
    }
  });
  return partials;
}

// The counts summed, and the worst element the first of the largest ratio, as a serial loop finds it.
void merge_partials(const std::vector<Partial>& partials, Judgement* j) {
  double worst_ratio = -1;
  for (const Partial& q : partials) {
    j->bad += q.bad;
    j->nonfinite_mismatch += q.nonfinite_mismatch;
    j->unjudged += q.unjudged;
    if (q.worst_index >= 0 && q.worst_ratio > worst_ratio) {
      worst_ratio = q.worst_ratio;
      j->worst_index = q.worst_index;
      j->got = q.got;
      j->expected = q.expected;
      j->error = q.error;
      j->allowed = q.allowed;
    }
  }
}

// The one line of evidence for a failed output: its worst element, and how many were out of tolerance.
std::string failure_message(const std::string& output_name, at::IntArrayRef sizes, const Judgement& j,
                            DType dtype, const Tolerance& tol, int64_t n) {
  std::string where = output_name + index_text(sizes, j.worst_index);
  std::string unit = tol.mode == "ulp" && dtype_is_floating(dtype) ? " ulp" : "";
  const std::string mode = dtype_is_floating(dtype) ? tol.mode : "exact";
  std::string message = where + ": got " + fmt(j.got) + ", expected " + fmt(j.expected) + " (" + dtype_name(dtype) +
                        ", " + mode + " tolerance: error " + fmt(j.error) + unit + " > allowed " + fmt(j.allowed) +
                        unit + "); " + std::to_string(j.bad) + " of " + std::to_string(n) + " elements out of tolerance";
  if (j.nonfinite_mismatch) message += ", " + std::to_string(j.nonfinite_mismatch) + " NaN/Inf mismatches";
  return message;
}

}  // namespace

Judgement judge_output(const std::string& output_name, const at::Tensor& out_in, const at::Tensor& ref_in,
                       const at::Tensor& scale_in, DType dtype, const Tolerance& tol, int64_t K,
                       const JudgeOptions& options) {
  Judgement j;
  at::Tensor out = out_in.to(at::kDouble).contiguous().reshape({-1});
  at::Tensor ref = ref_in.to(at::kDouble).contiguous().reshape({-1});
  at::Tensor scale = scale_in.defined() ? scale_in.to(at::kDouble).contiguous().reshape({-1}) : at::Tensor();
  if (out.numel() != ref.numel()) {
    j.pass = false;
    j.message = output_name + ": " + std::to_string(out.numel()) + " elements, expected " + std::to_string(ref.numel());
    return j;
  }
  const double* o = out.data_ptr<double>();
  const double* r = ref.data_ptr<double>();
  const double* s = scale.defined() ? scale.data_ptr<double>() : nullptr;
  const int64_t n = ref.numel();
  j.checked = n;
  j.vacuous = reference_is_vacuous(judged_as(dtype), r, n);
  merge_partials(judge_chunks(ElementRule(judged_as(dtype), tol, K, options), o, r, s, n), &j);
  j.pass = j.bad == 0;
  if (!j.pass) j.message = failure_message(output_name, ref_in.sizes(), j, dtype, tol, n);
  return j;
}

}  // namespace gauntlet
