// gauntlet corpus, planted bug (subnormals): softmax without subtracting the row maximum.
// exp(x) / sum(exp(x)) in float: right for KernelBench's inputs (U[0,1) or N(0,1) logits), but a logit
// above 88.7 overflows expf to inf and its row to NaN (inf / inf), where torch.softmax is finite.
// Otherwise the control's code; the backward entry is dropped.
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

// softmax(x, dim) for any rank >= 1 and dim in [-rank, rank): exp(x - max) / sum exp(x - max), the
// max subtracted first, everything in double (the denominator error-free), one rounding per output.
// NaN anywhere in a slice, +inf in a slice, or an all -inf slice give a NaN slice, as PyTorch does.
torch::Tensor forward(const torch::Tensor& x, int64_t dim) {
  check_float_cpu(x);
  const int64_t d = wrap_dim(dim, x.dim());
  const torch::Tensor xc = x.contiguous();
  const Split sp = split_at(xc.sizes(), d);
  torch::Tensor out = torch::empty(xc.sizes(), xc.options());
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "softmax_no_max", [&] {
    const scalar_t* in = xc.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    const size_t inner = static_cast<size_t>(sp.inner);
    std::vector<Acc> acc(inner);
    for (int64_t p = 0; p < sp.outer; ++p) {
      const int64_t off = p * sp.K * sp.inner;
      for (int64_t i = 0; i < sp.inner; ++i) acc[i] = Acc();
      // BUG: no max subtracted; exp in float, as a kernel's expf
      for (int64_t k = 0; k < sp.K; ++k) {
        const scalar_t* row = in + off + k * sp.inner;
        for (int64_t i = 0; i < sp.inner; ++i) acc[i].add(static_cast<double>(std::exp(static_cast<float>(row[i]))));
      }
      for (int64_t k = 0; k < sp.K; ++k) {
        const scalar_t* row = in + off + k * sp.inner;
        scalar_t* orow = o + off + k * sp.inner;
        for (int64_t i = 0; i < sp.inner; ++i)
          orow[i] = round_out<scalar_t>(static_cast<double>(std::exp(static_cast<float>(row[i]))) / acc[i].value());
      }
    }
  });
  return out;
}
