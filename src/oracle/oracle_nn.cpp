// fp64 oracles of the neural-network ops: norms, matmuls, conv2d, attention, embedding, cross-entropy.
#include <cmath>
#include <limits>

#include "oracle_internal.h"

namespace gauntlet::oracle_impl {

static constexpr double kInf = std::numeric_limits<double>::infinity();

static void expect_dim_size(const at::Tensor& t, const char* name, int64_t dim, int64_t size,
                            const char* what) {
  if (t.size(dim) != size)
    fail(std::string(name) + ": dim " + std::to_string(dim) + " is " + std::to_string(t.size(dim)) +
         " but must equal " + what + " = " + std::to_string(size) + " (shape " + shape_str(t) + ")");
}

// relu that keeps NaN, as torch.relu does.
static at::Tensor relu_nan(const at::Tensor& z) {
  return at::where(at::isnan(z) | (z > 0), z, at::zeros_like(z));
}

OracleResult layer_norm(const Inputs& in, const AttrMap& attrs) {
  expect_count(in, 3);
  const at::Tensor x = value_input(in, 0, "x");
  const at::Tensor w = value_input(in, 1, "weight");
  const at::Tensor b = value_input(in, 2, "bias");
  const double eps = attr_double(attrs, "eps");
  expect_min_rank(x, "x", 1);
  const int64_t d = x.size(-1);
  expect_rank(w, "weight", 1);
  expect_rank(b, "bias", 1);
  expect_dim_size(w, "weight", 0, d, "x's last dim");
  expect_dim_size(b, "bias", 0, d, "x's last dim");
  // Two-pass (mean, then mean of squared deviations): biased variance, as F.layer_norm uses.
  const at::Tensor mu = x.sum(-1, /*keepdim=*/true) / static_cast<double>(d);
  const at::Tensor xc = x - mu;
  const at::Tensor var = (xc * xc).sum(-1, /*keepdim=*/true) / static_cast<double>(d);
  const at::Tensor sigma = at::sqrt(var + eps);
  const at::Tensor y = xc / sigma * w + b;
  // Scale |w|*(1 + |x - mu|/sigma + mean|x|/sigma) + |b|: mu carries an error ~u*mean|x|
  // (a mean far from zero cancels in x - mu), which shifts the normalized value by
  // mean|x|/sigma; sigma's relative error (a sum of nonnegative squares) scales the normalized
  // value |x - mu|/sigma; the 1 and |b| cover the final multiply-add.
  const at::Tensor mean_abs = x.abs().sum(-1, /*keepdim=*/true) / static_cast<double>(d);
  const at::Tensor scale = w.abs() * (1.0 + xc.abs() / sigma + mean_abs / sigma) + b.abs();
  return make_result(y, scale);
}

OracleResult rms_norm(const Inputs& in, const AttrMap& attrs) {
  expect_count(in, 2);
  const at::Tensor x = value_input(in, 0, "x");
  const at::Tensor w = value_input(in, 1, "weight");
  const double eps = attr_double(attrs, "eps");
  expect_min_rank(x, "x", 1);
  expect_rank(w, "weight", 1);
  expect_dim_size(w, "weight", 0, x.size(-1), "x's last dim");
  const at::Tensor ms = (x * x).sum(-1, /*keepdim=*/true) / static_cast<double>(x.size(-1));
  const at::Tensor r = 1.0 / at::sqrt(ms + eps);
  // Scale |x|*r*|w| (= |y|): the one reduction, mean(x^2), sums nonnegative terms, so its
  // error is relative; it reaches y as half that relative error through rsqrt, and the
  // multiplies add a few u relative. There is no cancellation to budget for.
  return make_result(x * r * w, x.abs() * r * w.abs());
}

OracleResult matmul(const Inputs& in, const AttrMap&) {
  expect_count(in, 2);
  const at::Tensor a = value_input(in, 0, "a");
  const at::Tensor b = value_input(in, 1, "b");
  expect_rank(a, "a", 2);
  expect_rank(b, "b", 2);
  expect_dim_size(b, "b", 0, a.size(1), "a's K");
  // Scale |a|@|b|: each output is a K-term dot product whose bound is sum_k |a_ik*b_kj|.
  return make_result(at::mm(a, b), at::mm(a.abs(), b.abs()));
}

OracleResult linear_relu(const Inputs& in, const AttrMap&) {
  expect_count(in, 3);
  const at::Tensor x = value_input(in, 0, "x");
  const at::Tensor w = value_input(in, 1, "w");
  const at::Tensor b = value_input(in, 2, "b");
  expect_rank(x, "x", 2);
  expect_rank(w, "w", 2);
  expect_rank(b, "b", 1);
  expect_dim_size(w, "w", 1, x.size(1), "x's K");
  expect_dim_size(b, "b", 0, w.size(0), "w's N");
  // Scale |x|@|w|^T + |b|: the dot product plus the bias term; relu only clips, and a clipped
  // pre-activation near 0 errs by no more than the pre-activation did.
  return make_result(relu_nan(at::mm(x, w.t()) + b), at::mm(x.abs(), w.abs().t()) + b.abs());
}

OracleResult bmm(const Inputs& in, const AttrMap&) {
  expect_count(in, 2);
  const at::Tensor a = value_input(in, 0, "a");
  const at::Tensor b = value_input(in, 1, "b");
  expect_rank(a, "a", 3);
  expect_rank(b, "b", 3);
  expect_dim_size(b, "b", 0, a.size(0), "a's B");
  expect_dim_size(b, "b", 1, a.size(2), "a's K");
  // Scale |a|@|b| per batch, as for matmul.
  return make_result(at::bmm(a, b), at::bmm(a.abs(), b.abs()));
}

OracleResult conv2d(const Inputs& in, const AttrMap& attrs) {
  expect_count(in, 3);
  const at::Tensor x = value_input(in, 0, "x");
  const at::Tensor w = value_input(in, 1, "w");
  const at::Tensor b = value_input(in, 2, "b");
  const int64_t stride = attr_int(attrs, "stride");
  const int64_t padding = attr_int(attrs, "padding");
  expect_rank(x, "x", 4);
  expect_rank(w, "w", 4);
  expect_rank(b, "b", 1);
  expect_dim_size(w, "w", 1, x.size(1), "x's C");
  expect_dim_size(b, "b", 0, w.size(0), "w's O");
  if (stride < 1) fail("attribute 'stride' must be >= 1, got " + std::to_string(stride));
  if (padding < 0) fail("attribute 'padding' must be >= 0, got " + std::to_string(padding));
  for (int i = 2; i < 4; ++i) {
    if (w.size(i) < 1) fail("w: kernel size must be >= 1, got shape " + shape_str(w));
    if (x.size(i) + 2 * padding < w.size(i))
      fail("kernel " + shape_str(w) + " is larger than the padded input " + shape_str(x));
  }
  // Scale conv2d(|x|,|w|) + |b|: each output is a C*KH*KW-term dot product plus the bias;
  // zero padding contributes nothing to either.
  return make_result(at::conv2d(x, w, b, {stride, stride}, {padding, padding}),
                     at::conv2d(x.abs(), w.abs(), b.abs(), {stride, stride}, {padding, padding}));
}

OracleResult sdpa(const Inputs& in, const AttrMap& attrs) {
  expect_count(in, 3);
  const at::Tensor q = value_input(in, 0, "q");
  const at::Tensor k = value_input(in, 1, "k");
  const at::Tensor v = value_input(in, 2, "v");
  const bool causal = attr_bool(attrs, "causal");
  expect_rank(q, "q", 4);
  expect_rank(k, "k", 4);
  expect_rank(v, "v", 4);
  for (int i = 0; i < 2; ++i) {
    expect_dim_size(k, "k", i, q.size(i), i == 0 ? "q's B" : "q's H");
    expect_dim_size(v, "v", i, q.size(i), i == 0 ? "q's B" : "q's H");
  }
  expect_dim_size(k, "k", 3, q.size(3), "q's D");
  expect_dim_size(v, "v", 2, k.size(2), "k's S");
  if (k.size(2) == 0) {
    // No keys: the softmax is empty and P@V is an empty sum, zeros (PyTorch's math path).
    const at::Tensor zeros = at::zeros({q.size(0), q.size(1), q.size(2), v.size(3)}, q.options());
    return make_result(zeros, zeros.clone());
  }
  // D = 0 would make the scale inf and the (empty, zero) logits 0*inf = NaN; PyTorch's logits
  // are plain zeros there, so only scale when D > 0.
  const double scale = q.size(3) > 0 ? 1.0 / std::sqrt(static_cast<double>(q.size(3))) : 1.0;
  at::Tensor s = at::matmul(q, k.transpose(-2, -1)) * scale;
  at::Tensor qk_abs = at::matmul(q.abs(), k.abs().transpose(-2, -1)) * scale;
  if (causal) {
    // Top-left aligned lower triangle, as F.scaled_dot_product_attention builds it: query i
    // sees keys j <= i (the usual causal mask when S_q == S_k).
    const at::Tensor hidden = at::ones({q.size(2), k.size(2)}, q.options().dtype(at::kBool)).triu(1);
    s = s.masked_fill(hidden, -kInf);
    qk_abs = qk_abs.masked_fill(hidden, 0.0);
  }
  const at::Tensor p = softmax_nan(s, 3);
  // Scale (P@|V|)*(1 + max_j |q_i|.|k_j|/sqrt(D)) over visible j: P@V is a dot product over
  // keys (bound P@|V|), and an absolute logit error e moves P relative by about e; the logit
  // error is the softmax's u|s_ij - max| plus the q.k dot product's, bounded by |q_i|.|k_j|.
  // This is >= the (1 + max_j|s_ij|) form and stays sound when q.k cancels.
  // Keys whose weight is exactly 0 (a -inf logit from an infinite q or k entry) add no error to
  // the output, since exp(-inf) = 0 in any precision; left in, their infinite |q_i|.|k_j| would
  // make the scale infinite and the judge fall back to |y|, which a correct float32 kernel's
  // rounding of P@V can exceed.
  qk_abs = qk_abs.masked_fill(p == 0, 0.0);
  const at::Tensor logit_mag = std::get<0>(qk_abs.max(-1, /*keepdim=*/true));
  const at::Tensor out_scale = at::matmul(p, v.abs()) * (1.0 + logit_mag);
  return make_result(at::matmul(p, v), out_scale);
}

OracleResult embedding(const Inputs& in, const AttrMap&) {
  expect_count(in, 2);
  const at::Tensor w = value_input(in, 0, "weight");
  const at::Tensor idx = index_input(in, 1, "idx");
  expect_rank(w, "weight", 2);
  expect_rank(idx, "idx", 1);
  const int64_t vocab = w.size(0);
  const int64_t* p = idx.data_ptr<int64_t>();
  for (int64_t i = 0; i < idx.numel(); ++i)
    if (p[i] < 0 || p[i] >= vocab)
      fail("idx[" + std::to_string(i) + "] = " + std::to_string(p[i]) + " is outside [0, " +
           std::to_string(vocab) + ")");
  // A gather copies values: exact, no scale.
  return make_result(w.index_select(0, idx));
}

OracleResult cross_entropy(const Inputs& in, const AttrMap&) {
  expect_count(in, 2);
  const at::Tensor x = value_input(in, 0, "logits");
  const at::Tensor t = index_input(in, 1, "target");
  expect_rank(x, "logits", 2);
  expect_rank(t, "target", 1);
  expect_dim_size(t, "target", 0, x.size(0), "logits' N");
  const int64_t classes = x.size(1);
  const int64_t* p = t.data_ptr<int64_t>();
  for (int64_t i = 0; i < t.numel(); ++i)
    if (p[i] < 0 || p[i] >= classes)
      fail("target[" + std::to_string(i) + "] = " + std::to_string(p[i]) + " is outside [0, " +
           std::to_string(classes) + ")");
  if (x.size(0) == 0) {
    // Mean over no rows: 0/0, as F.cross_entropy gives.
    const at::Tensor nan = at::full({}, std::numeric_limits<double>::quiet_NaN(), x.options());
    return make_result(nan, nan.clone());
  }
  const at::Tensor lse = logsumexp_nan(x, 1, /*keepdim=*/false);
  const at::Tensor picked = x.gather(1, t.unsqueeze(1)).squeeze(1);
  // F.cross_entropy is nll_loss(log_softmax(x)), and log_softmax subtracts the row's max: a row
  // whose max is +inf gives inf - inf = NaN in every class, so its loss is NaN whatever the target
  // (lse - x_t alone would say +inf). OracleAgreement holds every oracle to ATen on such rows.
  const at::Tensor row_max = x.amax(1);
  const at::Tensor loss = at::where(row_max == kInf,
                                    at::full_like(lse, std::numeric_limits<double>::quiet_NaN()), lse - picked);
  // Scale mean_i(1 + |lse_i| + |x_i,t_i|): row i's loss lse_i - x_i,t errs by lse_i's error
  // (about u*(1 + |lse_i|), see logsumexp) plus the subtraction's; the mean over N is a sum
  // whose terms are bounded the same way.
  return make_result(loss.mean(), (1.0 + lse.abs() + picked.abs()).mean());
}

}  // namespace gauntlet::oracle_impl
