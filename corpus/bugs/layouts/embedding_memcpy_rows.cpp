// PLANTED BUG (layouts): embedding copies whole rows with memcpy from weight.data_ptr() + idx * D
// (the fast path for a row-major table) without making the table contiguous. The indices are made
// contiguous and range-checked, so nothing is out of bounds; but a transposed, sliced (strided) or
// expanded table has its rows elsewhere, and the copied bytes are other elements or the gaps.
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

// embedding(weight[V,D], idx[N] int64) = weight[idx]: rows copied bit for bit. Every index must lie
// in [0, V); anything else is rejected.
torch::Tensor forward(const torch::Tensor& weight, const torch::Tensor& idx) {
  check_float_cpu(weight);
  TORCH_CHECK(idx.defined() && idx.device().is_cpu(), "embedding: idx must be a CPU tensor");
  TORCH_CHECK(idx.layout() == at::kStrided, "embedding: idx must be a dense tensor");
  TORCH_CHECK(idx.scalar_type() == at::kLong, "embedding: idx must be int64");
  TORCH_CHECK(weight.dim() == 2, "embedding: weight must be 2-D [V, D]");
  TORCH_CHECK(idx.dim() == 1, "embedding: idx must be 1-D [N]");
  const int64_t V = weight.size(0), D = weight.size(1), N = idx.size(0);
  // The table is a parameter (row-major, allocated once): copy rows straight out of it.
  const torch::Tensor& wc = weight;
  const torch::Tensor ic = idx.contiguous();
  const int64_t* pi = ic.data_ptr<int64_t>();
  for (int64_t n = 0; n < N; ++n)
    TORCH_CHECK(pi[n] >= 0 && pi[n] < V, "embedding: index out of range [0, V)");
  torch::Tensor out = torch::empty({N, D}, wc.options());
  if (N == 0 || D == 0) return out;
  const size_t row_bytes = static_cast<size_t>(D) * wc.element_size();
  const char* src = static_cast<const char*>(wc.data_ptr());
  char* dst = static_cast<char*>(out.data_ptr());
  for (int64_t n = 0; n < N; ++n) std::memcpy(dst + n * row_bytes, src + pi[n] * row_bytes, row_bytes);
  return out;
}
