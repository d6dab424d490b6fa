// Element-wise judging against the oracle: NaN/Inf parity first, then the schema's tolerance mode.
#include "gauntlet/judge.h"

#include <cmath>
#include <cstdio>

#include "gauntlet/numerics.h"

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

double allowed_error(DType dtype, const Tolerance& tol, double ref, double scale, int64_t K) {
  const double rounded = num::round_to(dtype, ref);
  const double one_ulp = num::ulp_at(dtype, std::isfinite(rounded) ? rounded : num::limits(dtype).max_finite);
  if (tol.mode == "exact") return 0;
  if (tol.mode == "ulp") return tol.ulps * one_ulp;
  // reduction: output rounding plus an accumulation bound growing like sqrt(K).
  const double u = unit_roundoff_of(tol.accumulator);
  const double s = std::isfinite(scale) ? scale : std::fabs(ref);
  return tol.ulps * one_ulp + tol.c * u * std::sqrt(double(std::max<int64_t>(K, 1))) * s;
}

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
  const num::DTypeLimits lim = num::limits(dtype);
  j.checked = n;

  // Vacuity: a reference that is all zero, or constant over several elements, proves nothing about
  // the kernel (a single nonzero element is still evidence).
  bool constant = true;
  double first = n ? num::round_to(dtype, r[0]) : 0;
  for (int64_t i = 1; i < n && constant; ++i) {
    double v = num::round_to(dtype, r[i]);
    if (!(v == first || (std::isnan(v) && std::isnan(first)))) constant = false;
  }
  bool all_zero = true;
  for (int64_t i = 0; i < n && all_zero; ++i) all_zero = r[i] == 0;
  j.vacuous = n == 0 || all_zero || (n > 1 && constant);

  double worst_ratio = -1;
  for (int64_t i = 0; i < n; ++i) {
    // The module oracle's envelope leaves elements unjudged (an infinite scale) where the
    // framework's own Model in this dtype has no answer (docs/modules.md, "module-envelope").
    if (s && tol.mode == "module-envelope" && std::isinf(s[i])) {
      ++j.unjudged;
      continue;
    }
    const double want = num::round_to(dtype, r[i]);
    const double got = o[i];
    bool bad = false;
    double err = 0, allowed = 0;
    if (std::isnan(want) || std::isnan(got)) {
      bad = std::isnan(want) != std::isnan(got);
      if (bad) ++j.nonfinite_mismatch;
      err = bad ? INFINITY : 0;
    } else if (std::isinf(got) && std::isinf(want)) {
      bad = (got > 0) != (want > 0);
      if (bad) ++j.nonfinite_mismatch;
      err = bad ? INFINITY : 0;
    } else if (tol.mode == "exact") {
      bad = got != want && !(got == 0 && want == 0);
      err = std::fabs(got - want);
    } else if (tol.mode == "ulp") {
      const uint64_t d = num::ulp_distance(dtype, got, want);
      err = double(d);
      allowed = tol.ulps;
      bad = err > allowed;
      if (bad && std::isinf(got)) ++j.nonfinite_mismatch;
    } else {
      // Overflow: an infinite output counts as one step past max_finite (IEEE's threshold), so a
      // result that legitimately rounded to inf is not measured as infinitely far away.
      const double step = num::ulp_at(dtype, lim.max_finite);
      const double g = std::isinf(got) ? std::copysign(lim.max_finite + step, got) : got;
      const double w = std::isinf(r[i]) ? std::copysign(lim.max_finite + step, r[i]) : r[i];
      err = std::fabs(g - w);
      allowed = allowed_error(dtype, tol, r[i], s ? s[i] : NAN, K);
      bad = !(err <= allowed);
      if (bad && std::isinf(got) != std::isinf(want)) ++j.nonfinite_mismatch;
    }
    if (bad && options.defer_subnormal_range && std::isfinite(got) && std::isfinite(want) &&
        std::fabs(got) < lim.min_normal && std::fabs(want) < lim.min_normal)
      bad = false;
    if (!bad) continue;
    ++j.bad;
    const double ratio = std::isinf(err) ? INFINITY : (allowed > 0 ? err / allowed : err + 1);
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      j.worst_index = i;
      j.got = got;
      j.expected = want;
      j.error = err;
      j.allowed = allowed;
    }
  }
  j.pass = j.bad == 0;
  if (!j.pass) {
    std::string where = output_name + index_text(ref_in.sizes(), j.worst_index);
    std::string unit = tol.mode == "ulp" ? " ulp" : "";
    j.message = where + ": got " + fmt(j.got) + ", expected " + fmt(j.expected) + " (" + dtype_name(dtype) +
                ", " + tol.mode + " tolerance: error " + fmt(j.error) + unit + " > allowed " + fmt(j.allowed) +
                unit + "); " + std::to_string(j.bad) + " of " + std::to_string(n) + " elements out of tolerance";
    if (j.nonfinite_mismatch) j.message += ", " + std::to_string(j.nonfinite_mismatch) + " NaN/Inf mismatches";
  }
  return j;
}

}  // namespace gauntlet
