// gauntlet corpus, correct control: cross_entropy.
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

// cross_entropy(logits[N,C], target[N] int64) = F.cross_entropy(logits, target) with mean reduction:
// mean over rows of (logsumexp(row) - row[target]), a 0-d tensor in logits' dtype. Targets must lie
// in [0, C) (no ignore_index). Non-finite rows as PyTorch's log_softmax gives them: a row whose max
// is +inf has NaN in every class (inf - inf), so its loss is NaN whatever the target; an all -inf
// row gives -inf - -inf = NaN; a -inf target logit in a finite row gives +inf; NaN propagates.
// N = 0 gives NaN (mean of nothing). All in double with error-free sums, one rounding.
torch::Tensor forward(const torch::Tensor& logits, const torch::Tensor& target) {
  check_float_cpu(logits);
  TORCH_CHECK(target.defined() && target.device().is_cpu(), "cross_entropy: target must be a CPU tensor");
  TORCH_CHECK(target.layout() == at::kStrided, "cross_entropy: target must be a dense tensor");
  TORCH_CHECK(target.scalar_type() == at::kLong, "cross_entropy: target must be int64");
  TORCH_CHECK(logits.dim() == 2, "cross_entropy: logits must be 2-D [N, C]");
  TORCH_CHECK(target.dim() == 1, "cross_entropy: target must be 1-D [N]");
  TORCH_CHECK(target.size(0) == logits.size(0), "cross_entropy: target length differs from N");
  const int64_t N = logits.size(0), C = logits.size(1);
  const torch::Tensor lc = logits.contiguous();
  const torch::Tensor tc = target.contiguous();
  const int64_t* pt = tc.data_ptr<int64_t>();
  for (int64_t n = 0; n < N; ++n)
    TORCH_CHECK(pt[n] >= 0 && pt[n] < C, "cross_entropy: target out of range [0, C)");
  torch::Tensor out = torch::empty({}, lc.options());
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, lc.scalar_type(), "cross_entropy_control", [&] {
    const scalar_t* pl = lc.data_ptr<scalar_t>();
    Acc total;
    for (int64_t n = 0; n < N; ++n) {
      const scalar_t* row = pl + n * C;
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t c = 0; c < C; ++c) {
        const double v = static_cast<double>(row[c]);
        if (std::isnan(m)) break;
        if (std::isnan(v) || v > m) m = v;
      }
      const double shift = std::isfinite(m) ? m : 0.0;
      Acc s;
      for (int64_t c = 0; c < C; ++c) s.add(std::exp(static_cast<double>(row[c]) - shift));
      const double lse = std::log(s.value()) + shift;
      const bool plus_inf_max = std::isinf(m) && m > 0;
      total.add(plus_inf_max ? std::numeric_limits<double>::quiet_NaN() : lse - static_cast<double>(row[pt[n]]));
    }
    out.data_ptr<scalar_t>()[0] = round_out<scalar_t>(total.value() / static_cast<double>(N));
  });
  return out;
}
