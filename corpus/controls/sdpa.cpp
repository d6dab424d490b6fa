// gauntlet corpus, correct control: sdpa.
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

// sdpa(q, k, v [B,H,S,D], causal) = softmax(q @ k^T / sqrt(D) [+ causal mask]) @ v, as
// F.scaled_dot_product_attention with the default scale; causal: query i sees keys j <= i.
// Scores, the softmax (max subtracted, error-free denominator) and the weighted sum of v are
// computed in double and each output rounded once. Masked keys take part with weight exactly 0
// (0 * v), as the reference's softmax-then-matmul does, so NaN/Inf semantics match it.
torch::Tensor forward(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, bool causal) {
  check_float_cpu(q);
  check_float_cpu(k);
  check_float_cpu(v);
  check_same_dtype(q, k);
  check_same_dtype(q, v);
  TORCH_CHECK(q.dim() == 4, "sdpa: q must be 4-D [B, H, S, D]");
  TORCH_CHECK(k.dim() == 4 && v.dim() == 4, "sdpa: k and v must be 4-D [B, H, S, D]");
  TORCH_CHECK(k.sizes() == q.sizes() && v.sizes() == q.sizes(), "sdpa: q, k and v must have the same shape");
  const int64_t B = q.size(0), H = q.size(1), S = q.size(2), D = q.size(3);
  const torch::Tensor qc = q.contiguous();
  const torch::Tensor kc = k.contiguous();
  const torch::Tensor vc = v.contiguous();
  torch::Tensor out = torch::empty({B, H, S, D}, qc.options());
  if (out.numel() == 0) return out;
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  const double neg_inf = -std::numeric_limits<double>::infinity();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, qc.scalar_type(), "sdpa_control", [&] {
    const scalar_t* pq = qc.data_ptr<scalar_t>();
    const scalar_t* pk = kc.data_ptr<scalar_t>();
    const scalar_t* pv = vc.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    const size_t SD = static_cast<size_t>(S * D);
    std::vector<double> qd(SD), kd(SD), vd(SD), score(static_cast<size_t>(S));
    std::vector<Acc> acc(static_cast<size_t>(D));
    for (int64_t bh = 0; bh < B * H; ++bh) {
      const int64_t base = bh * S * D;
      for (size_t t = 0; t < SD; ++t) {
        qd[t] = static_cast<double>(pq[base + t]);
        kd[t] = static_cast<double>(pk[base + t]);
        vd[t] = static_cast<double>(pv[base + t]);
      }
      for (int64_t i = 0; i < S; ++i) {
        const double* qi = qd.data() + i * D;
        double m = neg_inf;
        for (int64_t j = 0; j < S; ++j) {
          double sc;
          if (causal && j > i) {
            sc = neg_inf;
          } else {
            const double* kj = kd.data() + j * D;
            Acc dot;
            for (int64_t t = 0; t < D; ++t) dot.add(qi[t] * kj[t]);
            sc = dot.value() * scale;
          }
          score[j] = sc;
          if (!std::isnan(m) && (std::isnan(sc) || sc > m)) m = sc;
        }
        Acc denom;
        for (int64_t j = 0; j < S; ++j) {
          score[j] = std::exp(score[j] - m);
          denom.add(score[j]);
        }
        const double z = denom.value();
        for (int64_t t = 0; t < D; ++t) acc[t] = Acc();
        for (int64_t j = 0; j < S; ++j) {
          const double p = score[j] / z;  // the attention weight, as softmax(...) would hold it
          const double* vj = vd.data() + j * D;
          for (int64_t t = 0; t < D; ++t) acc[t].add(p * vj[t]);
        }
        for (int64_t t = 0; t < D; ++t) o[base + i * D + t] = round_out<scalar_t>(acc[t].value());
      }
    }
  });
  return out;
}
