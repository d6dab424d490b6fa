// gauntlet corpus, planted bug (accuracy): gelu as its tanh approximation.
// 4 of 5 KernelBench leaderboard GELU solutions compute 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
// where the op is the exact erf GELU: about 2e-4 off near |x| = 2, which a 1e-2 allclose accepts and
// a float32 tolerance of a few ulps does not. Otherwise the control's code (double, one rounding).
#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

namespace {

// Rounds a double to scalar_t exactly once, round-to-nearest-even. For float this is the plain
// conversion. For Half/BFloat16 a plain static_cast would round twice (double -> float -> 16 bit);
// instead the double is first rounded to float with round-to-odd (truncate, then set the last bit
// when inexact), which makes the final float -> 16-bit RNE conversion the correct rounding of d.
template <typename T>
inline T round_out(double d) {
  if constexpr (std::is_same<T, double>::value) {
    return d;
  } else if constexpr (std::is_same<T, float>::value) {
    return static_cast<float>(d);
  } else {
    float f = static_cast<float>(d);
    if (std::isfinite(d) && static_cast<double>(f) != d) {
      if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
      uint32_t u;
      std::memcpy(&u, &f, sizeof u);
      u |= 1u;
      std::memcpy(&f, &u, sizeof f);
    }
    return static_cast<T>(f);
  }
}

// Error-free summation (Knuth's TwoSum): s + c carries about twice double's precision, so sums
// and dot products of float32/float16/bfloat16 terms come out essentially exact before the one
// final rounding. Non-finite terms: the plain running sum s holds the IEEE answer (inf, NaN).
struct Acc {
  double s = 0.0;
  double c = 0.0;
  inline void add(double x) {
    const double t = s + x;
    const double bp = t - s;
    c += (s - (t - bp)) + (x - bp);
    s = t;
  }
  inline double value() const { return std::isfinite(s) ? s + c : s; }
};

inline void check_float_cpu(const torch::Tensor& t) {
  TORCH_CHECK(t.defined(), "input tensor is undefined");
  TORCH_CHECK(t.device().is_cpu(), "this kernel runs on the CPU only");
  TORCH_CHECK(t.layout() == at::kStrided, "only strided (dense) tensors are supported");
  const auto s = t.scalar_type();
  TORCH_CHECK(s == at::kFloat || s == at::kHalf || s == at::kBFloat16,
              "unsupported dtype: expected float32, float16 or bfloat16");
}

inline void check_same_dtype(const torch::Tensor& a, const torch::Tensor& b) {
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "all floating inputs must have the same dtype");
}

// Validates dim against [-rank, rank) (rank >= 1) and wraps negative dims.
inline int64_t wrap_dim(int64_t dim, int64_t rank) {
  TORCH_CHECK(rank >= 1, "input must have at least one dimension");
  TORCH_CHECK(dim >= -rank && dim < rank, "dim out of range");
  return dim < 0 ? dim + rank : dim;
}

// Splits a contiguous shape around `d`: [outer, K, inner].
struct Split {
  int64_t outer = 1, K = 1, inner = 1;
};
inline Split split_at(at::IntArrayRef sizes, int64_t d) {
  Split s;
  for (int64_t i = 0; i < d; ++i) s.outer *= sizes[i];
  s.K = sizes[d];
  for (int64_t i = d + 1; i < static_cast<int64_t>(sizes.size()); ++i) s.inner *= sizes[i];
  return s;
}

}  // namespace

// gelu(x) = x * Phi(x) = 0.5 * x * erfc(-x / sqrt(2)), the exact (erf) form, evaluated in double
// and rounded once. erfc keeps full relative accuracy in the negative tail, where the textbook
// x * 0.5 * (1 + erf(x / sqrt(2))) cancels (for x < about -6 even in double). gelu(-inf) is NaN
// (-inf * 0), as PyTorch gives.
torch::Tensor forward(const torch::Tensor& x) {
  check_float_cpu(x);
  const torch::Tensor xc = x.contiguous();
  torch::Tensor out = torch::empty(xc.sizes(), xc.options());
  const int64_t n = xc.numel();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "gelu_tanh", [&] {
    const scalar_t* in = xc.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    for (int64_t i = 0; i < n; ++i) {
      const double v = static_cast<double>(in[i]);
      o[i] = round_out<scalar_t>(0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v))));  // BUG: tanh form
    }
  });
  return out;
}
