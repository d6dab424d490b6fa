// fp64 oracles of the reductions along one dim (sum, mean, amax, logsumexp, softmax, log_softmax, cumsum).
#include <limits>

#include "oracle_internal.h"

namespace gauntlet::oracle_impl {

static constexpr double kInf = std::numeric_limits<double>::infinity();
static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

namespace {

// x viewed with rank >= 1 (a 0-d tensor becomes [1], as PyTorch treats it) and `dim` wrapped.
struct DimView {
  at::Tensor x;
  int64_t dim;
  int64_t k;  // length of the reduced dim
};

DimView dim_view(const Inputs& in, const AttrMap& attrs) {
  expect_count(in, 1);
  const at::Tensor x = value_input(in, 0, "x");
  const int64_t dim = wrap_dim(attr_int(attrs, "dim"), x.dim());
  at::Tensor xv = x.dim() == 0 ? x.reshape({1}) : x;
  return {xv, dim, xv.size(dim)};
}

}  // namespace

at::Tensor amax_nan(const at::Tensor& x, int64_t dim, bool keepdim) {
  // Force NaN explicitly rather than trusting each ATen version's max kernel to propagate it.
  const at::Tensor m = at::amax(x, {dim}, keepdim);
  return at::where(at::isnan(x).any(dim, keepdim), at::full_like(m, kNaN), m);
}

at::Tensor logsumexp_nan(const at::Tensor& x, int64_t dim, bool keepdim) {
  if (x.size(dim) == 0) {
    std::vector<int64_t> s(x.sizes().begin(), x.sizes().end());
    if (keepdim) s[dim] = 1; else s.erase(s.begin() + dim);
    return at::full(s, -kInf, x.options());
  }
  const at::Tensor m = amax_nan(x, dim, /*keepdim=*/true);
  // Shift only by a finite max: an all -inf row then gives log(0) + 0 = -inf, a +inf gives
  // log(inf) = +inf, and a NaN max is replaced by 0 so the NaN still flows through exp.
  const at::Tensor shift = at::where(at::isfinite(m), m, at::zeros_like(m));
  at::Tensor r = at::log(at::exp(x - shift).sum(dim, /*keepdim=*/true)) + shift;
  return keepdim ? r : r.squeeze(dim);
}

at::Tensor softmax_nan(const at::Tensor& x, int64_t dim) {
  if (x.size(dim) == 0) return x.clone();
  // No finite-shift trick here: PyTorch gives NaN for an all -inf row (-inf - -inf) and for a
  // row holding +inf (inf - inf), and so does this.
  const at::Tensor e = at::exp(x - amax_nan(x, dim, /*keepdim=*/true));
  return e / e.sum(dim, /*keepdim=*/true);
}

OracleResult sum(const Inputs& in, const AttrMap& attrs) {
  const DimView v = dim_view(in, attrs);
  // Scale sum|x|: the textbook bound of a K-term floating sum.
  return make_result(v.x.sum(v.dim), v.x.abs().sum(v.dim));
}

OracleResult mean(const Inputs& in, const AttrMap& attrs) {
  const DimView v = dim_view(in, attrs);
  // K = 0 gives 0/0 = NaN, as torch.mean of an empty dim does.
  const double k = static_cast<double>(v.k);
  // Scale sum|x|/K: the sum's bound, then one exact-enough division by K.
  return make_result(v.x.sum(v.dim) / k, v.x.abs().sum(v.dim) / k);
}

OracleResult amax(const Inputs& in, const AttrMap& attrs) {
  const DimView v = dim_view(in, attrs);
  if (v.k == 0) fail("amax over an empty dim has no identity (PyTorch raises)");
  // No scale: a max is exact.
  return make_result(amax_nan(v.x, v.dim, /*keepdim=*/false));
}

OracleResult logsumexp(const Inputs& in, const AttrMap& attrs) {
  const DimView v = dim_view(in, attrs);
  const at::Tensor y = logsumexp_nan(v.x, v.dim, /*keepdim=*/false);
  if (v.k == 0) return make_result(y, at::ones_like(y));
  // Scale 1 + |max| + |lse|: rounding x_j - max costs u|x_j - max|, but term j only weighs
  // p_j, and sum_j p_j|x_j - max| <= ln K (< sqrt K, which the bound already carries); the
  // final max + log(sum) rounds relative to |max| and |lse|. Using max|x| instead would let a
  // -inf (masked) entry make the tolerance infinite for a finite result.
  const at::Tensor m = amax_nan(v.x, v.dim, /*keepdim=*/false);
  return make_result(y, 1.0 + m.abs() + y.abs());
}

OracleResult softmax(const Inputs& in, const AttrMap& attrs) {
  const DimView v = dim_view(in, attrs);
  const at::Tensor y = softmax_nan(v.x, v.dim);
  at::Tensor scale = at::zeros_like(y);
  if (v.k > 0) {
    // Scale y*(1 + |x - max|): the rounded x_i - max becomes a relative error |x_i - max|*u of
    // exp, i.e. y_i*u*|x_i - max|; exp, the sum (all terms positive) and the division add a
    // few u relative. Where y is exactly 0 (x = -inf, masked) the product would be 0*inf = NaN;
    // the answer there is exactly 0, so the scale is 0.
    const at::Tensor d = (v.x - amax_nan(v.x, v.dim, /*keepdim=*/true)).abs();
    scale = at::where(y == 0, at::zeros_like(y), y * (1.0 + d));
  }
  return make_result(y.reshape(in[0].sizes()), scale.reshape(in[0].sizes()));
}

OracleResult log_softmax(const Inputs& in, const AttrMap& attrs) {
  const DimView v = dim_view(in, attrs);
  if (v.k == 0) return make_result(v.x.reshape(in[0].sizes()), at::zeros(in[0].sizes(), v.x.options()));
  const at::Tensor m = amax_nan(v.x, v.dim, /*keepdim=*/true);
  const at::Tensor d = v.x - m;  // NaN for an all -inf row, as in PyTorch
  const at::Tensor y = d - at::log(at::exp(d).sum(v.dim, /*keepdim=*/true));
  // Scale 1 + |x - max| + |y|: the rounded x - max (u|x - max|), the log of a positive sum
  // (about u*ln K absolute, see logsumexp) and the final subtraction (u|y|).
  return make_result(y.reshape(in[0].sizes()), (1.0 + d.abs() + y.abs()).reshape(in[0].sizes()));
}

OracleResult cumsum(const Inputs& in, const AttrMap& attrs) {
  const DimView v = dim_view(in, attrs);
  // Scale cumsum|x|: each prefix is a sum of its own terms.
  return make_result(at::cumsum(v.x, v.dim).reshape(in[0].sizes()),
                     at::cumsum(v.x.abs(), v.dim).reshape(in[0].sizes()));
}

}  // namespace gauntlet::oracle_impl
