// Exact dot products (matmul, bmm, linear_relu): a float64 GEMM with a rigorous bound, superaccumulated only near ties.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "gauntlet/common/numerics.h"
#include "gauntlet/oracle/superacc.h"
#include "oracle_internal.h"

namespace gauntlet::oracle_impl {
namespace {

// Finite values that are float32 values (float16 and bfloat16 ones are too). The product of two
// has at most 48 significant bits and a magnitude in [2^-298, 2^256]: an exact double, and every
// partial sum of such products is a multiple of 2^-298, so float64 sums of them never underflow
// (no subnormal partial sum) and, for any K below 2^700, never overflow. Under those conditions the
// standard model of floating-point addition holds with no underflow term.
bool finite_float32_values(const at::Tensor& t) {
  if (!t.defined()) return true;
  const double* p = t.data_ptr<double>();
  constexpr double kMaxFloat = std::numeric_limits<float>::max();
  for (int64_t i = 0, n = t.numel(); i < n; ++i)
    if (!(std::fabs(p[i]) <= kMaxFloat) || double(float(p[i])) != p[i]) return false;
  return true;
}

// The exponent of the lowest set bit over a tensor's nonzero values (finite float32 values are
// normal doubles): every value is an integer multiple of 2^result. Large when all are zero.
int lowest_bit_exponent(const at::Tensor& t) {
  int lowest = 4096;
  if (!t.defined()) return lowest;
  const double* p = t.data_ptr<double>();
  for (int64_t i = 0, n = t.numel(); i < n; ++i) {
    if (p[i] == 0) continue;
    uint64_t bits;
    std::memcpy(&bits, &p[i], sizeof bits);
    const int exponent = int((bits >> 52) & 0x7ff) - 1075;
    const uint64_t mantissa = (bits & ((uint64_t(1) << 52) - 1)) | (uint64_t(1) << 52);
    lowest = std::min(lowest, exponent + __builtin_ctzll(mantissa));
  }
  return lowest;
}

// Higham's gamma_n = n*u / (1 - n*u), u = 2^-53.
double gamma_n(double n) {
  const double nu = n * std::ldexp(1.0, -53);
  return nu / (1 - nu);
}

// One element, term by term: the plain reference the filter defers to.
double dot_exact(const double* row, const double* pw, int64_t K, int64_t N, int64_t j, bool w_kn, const double* bias,
                 DType out) {
  SuperAccumulator acc;
  for (int64_t k = 0; k < K; ++k) acc.add_product(row[k], w_kn ? pw[k * N + j] : pw[j * K + k]);
  if (bias) acc.add(bias[j]);
  return acc.round_to(out);
}

}  // namespace

at::Tensor exact_gemm(const at::Tensor& a, const at::Tensor& w, const at::Tensor& bias, bool w_kn, bool relu,
                      DType out, ExactPath path, ExactOracleStats* stats, at::Tensor* scale) {
  const int64_t B = a.size(0), M = a.size(1), K = a.size(2), N = w_kn ? w.size(2) : w.size(1);
  const bool filtered = path == ExactPath::Filtered && finite_float32_values(a) && finite_float32_values(w) &&
                        finite_float32_values(bias);
  // The float64 GEMMs: C (the values the filter starts from) and |a|@|w| (the bound's sum of
  // |products|, and the tolerance's scale, as the fp64 oracle computes it). A problem's own sizes
  // make these seconds of every core: they take a heavy turn as run_oracle's calls do.
  at::Tensor c, s;
  {
    std::optional<HeavyOracleTurn> turn;
    if (is_heavy_oracle_call({a, w, bias})) turn.emplace();
    const at::Tensor wt = w_kn ? w : w.transpose(1, 2);
    const bool one = B == 1;
    s = one ? at::mm(a[0].abs(), wt[0].abs()).unsqueeze(0) : at::bmm(a.abs(), wt.abs());
    if (filtered) c = (one ? at::mm(a[0], wt[0]).unsqueeze(0) : at::bmm(a, wt)).contiguous();
    s = s.contiguous();
  }
  at::Tensor y = at::empty({B, M, N}, a.options());
  const double* pa = a.data_ptr<double>();
  const double* pw = w.data_ptr<double>();
  const double* pb = bias.defined() ? bias.data_ptr<double>() : nullptr;
  const double* pc = filtered ? c.data_ptr<double>() : nullptr;
  const double* ps = s.data_ptr<double>();
  double* o = y.data_ptr<double>();
  // |fl(sum) - sum| <= gamma_{K-1} * sum|p_k| for any order of K-1 additions, fused or not (BLAS
  // blocks K as it likes); K+1 covers a beta*C term. The computed |a|@|w| errs below the true sum
  // by at most the same factor, hence the division. The bound is itself computed in float64: the
  // relative margin 2^-40 covers its few roundings.
  const double g = gamma_n(double(K + 1));
  const double bound_factor = g / (1 - g) * (1 + std::ldexp(1.0, -40));
  const double u = std::ldexp(1.0, -53);
  // Every product is a multiple of 2^(qa + qw), the bias of 2^qb, so every partial sum is a multiple
  // of 2^q. Where sum|terms| stays below 2^(53 + q) each partial sum is a double: the float64 GEMM
  // is exact (integer data: float16's odd integers past 2048 are exact ties, which no bound
  // interval around them could decide).
  double exact_below = 0;
  if (filtered) {
    const int q = std::min(lowest_bit_exponent(a) + lowest_bit_exponent(w), lowest_bit_exponent(bias));
    exact_below = std::ldexp(1.0, std::min(53 + q, 2000));
  }
  const double sum_margin = 1 / (1 - g) * (1 + std::ldexp(1.0, -40));
  int64_t superaccumulated = 0;
  for (int64_t b = 0; b < B; ++b) {
    const double* pwb = pw + b * K * N;
    for (int64_t i = 0; i < M; ++i) {
      const double* row = pa + (b * M + i) * K;
      for (int64_t j = 0; j < N; ++j) {
        const int64_t at = (b * M + i) * N + j;
        double v = 0;
        bool decided = false;
        if (filtered) {
          // fl(C + bias) adds one rounding of at most u*|C + bias| <= 2u*|value|.
          const double value = pb ? pc[at] + pb[j] : pc[at];
          double err = bound_factor * ps[at];
          if (pb) err = (err + 2 * u * std::fabs(value)) * (1 + std::ldexp(1.0, -40));
          if (ps[at] * sum_margin + (pb ? std::fabs(pb[j]) : 0.0) < exact_below) {
            // Exact: rounded once here (an exact zero is +0, as the superaccumulator gives it).
            v = value == 0 ? 0.0 : num::round_to(out, value);
            decided = true;
          } else {
            // Outward by one double ulp each: the subtraction and addition round too.
            const double lo = std::nextafter(value - err, -INFINITY), hi = std::nextafter(value + err, INFINITY);
            const double rlo = num::round_to(out, lo), rhi = num::round_to(out, hi);
            // Rounding is monotone: both ends rounding to one value puts the exact sum's rounding
            // there too. A zero is left to the superaccumulator (an exact zero is +0, a tiny
            // negative sum -0 or a subnormal).
            if (rlo == rhi && rlo != 0) {
              v = rlo;
              decided = true;
            }
          }
        }
        if (!decided) {
          v = dot_exact(row, pwb, K, N, j, w_kn, pb, out);
          ++superaccumulated;
        }
        // relu after the one rounding equals rounding after relu (rounding is monotone, 0 exact).
        if (relu && v < 0) v = 0;
        o[at] = v;
      }
    }
  }
  if (stats) {
    stats->outputs += B * M * N;
    stats->superaccumulated += superaccumulated;
    stats->filtered = stats->filtered || filtered;
  }
  if (scale) *scale = pb ? s + bias.abs() : s;
  return y;
}

}  // namespace gauntlet::oracle_impl
