// PLANTED BUG (accumulation): sum over long rows (K >= 2048) of a large batch (at least 32 output
// elements) takes a "two-level" path: each 512-element chunk of a row is summed in float (fine), and
// the chunk partials are combined in scalar_t, the input dtype. For float32 that is an ordinary
// float32 accumulator; for float16/bfloat16 the running sum of the partials is rounded to 11 or 8
// bits after every chunk: chunk partials past half an ulp of the running sum are lost or rounded,
// and float16 partial sums past 65504 overflow to inf. Short rows, or few of them (every typical,
// KernelBench and held-out shape the other gates use), take the exact path.
#include <torch/torch.h>

#include <algorithm>
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

// sum(x, dim): x.sum(dim) for any rank >= 1 and dim in [-rank, rank). An empty reduced dim gives 0.
torch::Tensor forward(const torch::Tensor& x, int64_t dim) {
  check_float_cpu(x);
  const int64_t d = wrap_dim(dim, x.dim());
  const torch::Tensor xc = x.contiguous();
  const Split sp = split_at(xc.sizes(), d);
  std::vector<int64_t> out_shape;
  for (int64_t i = 0; i < xc.dim(); ++i)
    if (i != d) out_shape.push_back(xc.size(i));
  torch::Tensor out = torch::empty(out_shape, xc.options());
  const bool two_level = sp.K >= 2048 && sp.outer * sp.inner >= 32;
  const int64_t chunk = 512;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "sum_two_level", [&] {
    const scalar_t* in = xc.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    for (int64_t p = 0; p < sp.outer; ++p) {
      for (int64_t i = 0; i < sp.inner; ++i) {
        const scalar_t* base = in + p * sp.K * sp.inner + i;
        if (!two_level) {
          Acc acc;
          for (int64_t k = 0; k < sp.K; ++k) acc.add(static_cast<double>(base[k * sp.inner]));
          o[p * sp.inner + i] = round_out<scalar_t>(acc.value());
          continue;
        }
        scalar_t total = scalar_t(0);  // BUG: the second level accumulates in the input dtype
        for (int64_t k0 = 0; k0 < sp.K; k0 += chunk) {
          float partial = 0.f;
          for (int64_t k = k0; k < std::min(sp.K, k0 + chunk); ++k) partial += static_cast<float>(base[k * sp.inner]);
          total = static_cast<scalar_t>(static_cast<float>(total) + partial);
        }
        o[p * sp.inner + i] = total;
      }
    }
  });
  return out;
}
