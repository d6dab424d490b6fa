// gauntlet corpus, correct control: bmm.
// A reference-grade native CPU kernel (SPEC kernel form 1): plain loops over data_ptr after
// .contiguous(), double-precision arithmetic, one rounding to the output dtype, NaN/Inf as
// PyTorch, out-of-contract inputs rejected with TORCH_CHECK. Expected to pass every gate.
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

// bmm(a[B,M,K], b[B,K,N]) = torch.bmm(a, b). Exact products in double, each dot product summed
// error-free and rounded once. K = 0 gives zeros.
torch::Tensor forward(const torch::Tensor& a, const torch::Tensor& b) {
  check_float_cpu(a);
  check_float_cpu(b);
  check_same_dtype(a, b);
  TORCH_CHECK(a.dim() == 3, "bmm: a must be 3-D [B, M, K]");
  TORCH_CHECK(b.dim() == 3, "bmm: b must be 3-D [B, K, N]");
  TORCH_CHECK(a.size(0) == b.size(0), "bmm: batch sizes of a and b differ");
  TORCH_CHECK(a.size(2) == b.size(1), "bmm: inner dimensions of a and b differ");
  const int64_t B = a.size(0), M = a.size(1), K = a.size(2), N = b.size(2);
  const torch::Tensor ac = a.contiguous();
  const torch::Tensor bc = b.contiguous();
  torch::Tensor out = torch::empty({B, M, N}, ac.options());
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, ac.scalar_type(), "bmm_control", [&] {
    const scalar_t* pa = ac.data_ptr<scalar_t>();
    const scalar_t* pb = bc.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    std::vector<double> bt(static_cast<size_t>(K * N));
    std::vector<double> arow(static_cast<size_t>(K));
    for (int64_t z = 0; z < B; ++z) {
      const scalar_t* az = pa + z * M * K;
      const scalar_t* bz = pb + z * K * N;
      scalar_t* oz = o + z * M * N;
      for (int64_t k = 0; k < K; ++k)
        for (int64_t j = 0; j < N; ++j) bt[j * K + k] = static_cast<double>(bz[k * N + j]);
      for (int64_t i = 0; i < M; ++i) {
        for (int64_t k = 0; k < K; ++k) arow[k] = static_cast<double>(az[i * K + k]);
        for (int64_t j = 0; j < N; ++j) {
          const double* bj = bt.data() + j * K;
          Acc acc;
          for (int64_t k = 0; k < K; ++k) acc.add(arow[k] * bj[k]);
          oz[i * N + j] = round_out<scalar_t>(acc.value());
        }
      }
    }
  });
  return out;
}
