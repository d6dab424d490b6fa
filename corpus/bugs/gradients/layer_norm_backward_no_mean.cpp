// gauntlet corpus, planted bug (gradients gate): layer_norm whose backward drops the mean-of-gradient term.
// The forward is the correct control's (every other gate passes, and a KernelBench-style check of
// the forward accepts it). The input gradient omits - mean(weight * g), the path through the row
// mean: dx = rstd * (wg - xhat * mean(wg * xhat)). dweight and dbias are right, so only dx is off,
// by rstd * mean(weight * g) in every element of a row.
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

// layer_norm(x, weight, bias, eps) over the last dim D: (x - mean) / sqrt(var + eps) * weight + bias
// with the biased variance, as F.layer_norm(x, [D], weight, bias, eps). x has rank >= 1; weight and
// bias are [D] in x's dtype. Two passes in double (error-free sums), one rounding per output.
torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                      double eps) {
  check_float_cpu(x);
  check_float_cpu(weight);
  check_float_cpu(bias);
  check_same_dtype(x, weight);
  check_same_dtype(x, bias);
  TORCH_CHECK(x.dim() >= 1, "layer_norm: x must have at least one dimension");
  const int64_t D = x.size(-1);
  TORCH_CHECK(weight.dim() == 1 && weight.size(0) == D, "layer_norm: weight must be 1-D of length D");
  TORCH_CHECK(bias.dim() == 1 && bias.size(0) == D, "layer_norm: bias must be 1-D of length D");
  const torch::Tensor xc = x.contiguous();
  const torch::Tensor wc = weight.contiguous();
  const torch::Tensor bc = bias.contiguous();
  torch::Tensor out = torch::empty(xc.sizes(), xc.options());
  const int64_t rows = D == 0 ? 0 : xc.numel() / D;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "layer_norm_control", [&] {
    const scalar_t* in = xc.data_ptr<scalar_t>();
    const scalar_t* pw = wc.data_ptr<scalar_t>();
    const scalar_t* pb = bc.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    for (int64_t r = 0; r < rows; ++r) {
      const scalar_t* row = in + r * D;
      Acc s;
      for (int64_t j = 0; j < D; ++j) s.add(static_cast<double>(row[j]));
      const double mean = s.value() / static_cast<double>(D);
      Acc q;
      for (int64_t j = 0; j < D; ++j) {
        const double c = static_cast<double>(row[j]) - mean;
        q.add(c * c);
      }
      const double var = q.value() / static_cast<double>(D);
      const double rstd = 1.0 / std::sqrt(var + eps);
      for (int64_t j = 0; j < D; ++j)
        o[r * D + j] = round_out<scalar_t>((static_cast<double>(row[j]) - mean) * rstd *
                                               static_cast<double>(pw[j]) +
                                           static_cast<double>(pb[j]));
    }
  });
  return out;
}

// Backward of layer_norm (gradients gate; calling convention in docs/schema-format.md): the
// forward's arguments, then the output gradient g; returns {dx, dweight, dbias}. Per row, with
// xhat = (x - mean) * rstd and wg = weight * g:
//   dx = rstd * (wg - mean(wg) - xhat * mean(wg * xhat)),  dweight = sum_rows g * xhat,  dbias = sum_rows g.
// Statistics and sums in double (error-free), each gradient element rounded once.
std::vector<torch::Tensor> backward(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                                    double eps, const torch::Tensor& grad_y) {
  check_float_cpu(x);
  check_float_cpu(weight);
  check_float_cpu(bias);
  check_float_cpu(grad_y);
  check_same_dtype(x, weight);
  check_same_dtype(x, bias);
  check_same_dtype(x, grad_y);
  TORCH_CHECK(x.dim() >= 1, "layer_norm: x must have at least one dimension");
  const int64_t D = x.size(-1);
  TORCH_CHECK(weight.dim() == 1 && weight.size(0) == D, "layer_norm: weight must be 1-D of length D");
  TORCH_CHECK(bias.dim() == 1 && bias.size(0) == D, "layer_norm: bias must be 1-D of length D");
  TORCH_CHECK(grad_y.sizes() == x.sizes(), "layer_norm backward: grad_y must have x's shape");
  const torch::Tensor xc = x.contiguous();
  const torch::Tensor wc = weight.contiguous();
  const torch::Tensor gc = grad_y.contiguous();
  torch::Tensor dx = torch::empty(xc.sizes(), xc.options());
  torch::Tensor dw = torch::empty({D}, xc.options());
  torch::Tensor db = torch::empty({D}, xc.options());
  const int64_t rows = D == 0 ? 0 : xc.numel() / D;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "layer_norm_control_backward", [&] {
    const scalar_t* in = xc.data_ptr<scalar_t>();
    const scalar_t* pw = wc.data_ptr<scalar_t>();
    const scalar_t* pg = gc.data_ptr<scalar_t>();
    std::vector<Acc> sw(static_cast<size_t>(D)), sb(static_cast<size_t>(D));
    std::vector<double> xhat(static_cast<size_t>(D));
    for (int64_t r = 0; r < rows; ++r) {
      const scalar_t* row = in + r * D;
      const scalar_t* g = pg + r * D;
      Acc s;
      for (int64_t j = 0; j < D; ++j) s.add(static_cast<double>(row[j]));
      const double mean = s.value() / static_cast<double>(D);
      Acc q;
      for (int64_t j = 0; j < D; ++j) {
        const double c = static_cast<double>(row[j]) - mean;
        q.add(c * c);
      }
      const double rstd = 1.0 / std::sqrt(q.value() / static_cast<double>(D) + eps);
      Acc a, b;  // sum(wg), sum(wg * xhat)
      for (int64_t j = 0; j < D; ++j) {
        xhat[j] = (static_cast<double>(row[j]) - mean) * rstd;
        const double gj = static_cast<double>(g[j]);
        const double wg = static_cast<double>(pw[j]) * gj;
        a.add(wg);
        b.add(wg * xhat[j]);
        sw[j].add(gj * xhat[j]);
        sb[j].add(gj);
      }
      const double ma = a.value() / static_cast<double>(D), mb = b.value() / static_cast<double>(D);
      scalar_t* o = dx.data_ptr<scalar_t>() + r * D;
      (void)ma;  // BUG: mean(weight * g) is computed but never subtracted
      for (int64_t j = 0; j < D; ++j)
        o[j] = round_out<scalar_t>(rstd * (static_cast<double>(pw[j]) * static_cast<double>(g[j]) - xhat[j] * mb));
    }
    scalar_t* ow = dw.data_ptr<scalar_t>();
    scalar_t* ob = db.data_ptr<scalar_t>();
    for (int64_t j = 0; j < D; ++j) {
      ow[j] = round_out<scalar_t>(sw[j].value());
      ob[j] = round_out<scalar_t>(sb[j].value());
    }
  });
  return {dx, dw, db};
}
