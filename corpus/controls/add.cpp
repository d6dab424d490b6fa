// gauntlet corpus, correct control: add.
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

// add(a, b) = a + b with NumPy/PyTorch broadcasting in both directions; b must have a's dtype.
// Each element is the double sum of the two inputs rounded once (correctly rounded: a double holds
// the exact sum's rounding without double-rounding error for 24-bit or narrower formats).
torch::Tensor forward(const torch::Tensor& a, const torch::Tensor& b) {
  check_float_cpu(a);
  check_float_cpu(b);
  check_same_dtype(a, b);
  const torch::Tensor ac = a.contiguous();
  const torch::Tensor bc = b.contiguous();
  const int64_t ra = ac.dim(), rb = bc.dim();
  const int64_t r = ra > rb ? ra : rb;
  // Contiguous strides of each input.
  std::vector<int64_t> stride_a(ra > 0 ? ra : 1, 1), stride_b(rb > 0 ? rb : 1, 1);
  for (int64_t i = ra - 2; i >= 0; --i) stride_a[i] = stride_a[i + 1] * ac.size(i + 1);
  for (int64_t i = rb - 2; i >= 0; --i) stride_b[i] = stride_b[i + 1] * bc.size(i + 1);
  std::vector<int64_t> shape(r), sa(r, 0), sb(r, 0);
  for (int64_t i = 0; i < r; ++i) {
    const int64_t ia = i - (r - ra), ib = i - (r - rb);
    const int64_t da = ia >= 0 ? ac.size(ia) : 1;
    const int64_t db = ib >= 0 ? bc.size(ib) : 1;
    TORCH_CHECK(da == db || da == 1 || db == 1, "shapes of a and b are not broadcastable");
    shape[i] = da == 1 ? db : da;
    sa[i] = (ia >= 0 && da != 1) ? stride_a[ia] : 0;
    sb[i] = (ib >= 0 && db != 1) ? stride_b[ib] : 0;
  }
  torch::Tensor out = torch::empty(shape, ac.options());
  const int64_t n = out.numel();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, ac.scalar_type(), "add_control", [&] {
    const scalar_t* pa = ac.data_ptr<scalar_t>();
    const scalar_t* pb = bc.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    std::vector<int64_t> idx(r, 0);
    int64_t oa = 0, ob = 0;
    for (int64_t lin = 0; lin < n; ++lin) {
      o[lin] = round_out<scalar_t>(static_cast<double>(pa[oa]) + static_cast<double>(pb[ob]));
      for (int64_t d = r - 1; d >= 0; --d) {
        ++idx[d];
        oa += sa[d];
        ob += sb[d];
        if (idx[d] < shape[d]) break;
        oa -= sa[d] * shape[d];
        ob -= sb[d] * shape[d];
        idx[d] = 0;
      }
    }
  });
  return out;
}
