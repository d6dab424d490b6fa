// PLANTED BUG (accumulation): matmul for large GEMMs (M*N >= 64 and K >= 2048) takes a "fast" path
// whose dot products accumulate in scalar_t: `scalar_t acc = 0; acc += a[i][k] * b[k][j]`. For
// float32 that is an ordinary float32 accumulator; for float16/bfloat16 the whole accumulation is in
// the 16-bit dtype (c10::Half and c10::BFloat16 arithmetic rounds every product and every running
// sum to 11 or 8 bits): integer sums past 2048 (float16) or 256 (bfloat16) round, small products are
// swamped, and float16 partial sums past 65504 overflow. Smaller GEMMs (every typical, KernelBench and
// held-out shape the other gates use: K <= 512, or one long dim with the others small) take the exact
// path. The accumulation gate's failure is named by diagnosis: half-accumulation.
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

// matmul(a[M,K], b[K,N]) = a @ b.
torch::Tensor forward(const torch::Tensor& a, const torch::Tensor& b) {
  check_float_cpu(a);
  check_float_cpu(b);
  check_same_dtype(a, b);
  TORCH_CHECK(a.dim() == 2, "matmul: a must be 2-D [M, K]");
  TORCH_CHECK(b.dim() == 2, "matmul: b must be 2-D [K, N]");
  TORCH_CHECK(a.size(1) == b.size(0), "matmul: inner dimensions of a and b differ");
  const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
  const torch::Tensor ac = a.contiguous();
  const torch::Tensor bc = b.contiguous();
  torch::Tensor out = torch::empty({M, N}, ac.options());
  const bool fast = M * N >= 64 && K >= 2048;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, ac.scalar_type(), "matmul_half_accumulator", [&] {
    const scalar_t* pa = ac.data_ptr<scalar_t>();
    const scalar_t* pb = bc.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    for (int64_t i = 0; i < M; ++i) {
      for (int64_t j = 0; j < N; ++j) {
        if (!fast) {
          Acc acc;
          for (int64_t k = 0; k < K; ++k)
            acc.add(static_cast<double>(pa[i * K + k]) * static_cast<double>(pb[k * N + j]));
          o[i * N + j] = round_out<scalar_t>(acc.value());
          continue;
        }
        scalar_t acc = scalar_t(0);  // BUG: the accumulator has the inputs' dtype
        for (int64_t k = 0; k < K; ++k) acc += pa[i * K + k] * pb[k * N + j];
        o[i * N + j] = acc;
      }
    }
  });
  return out;
}
