// fp64 oracles of the elementwise ops (relu, gelu, sigmoid, add, clamp); exact/ulp ops, so no scales.
#include <cmath>
#include <limits>

#include "oracle_internal.h"

namespace gauntlet::oracle_impl {

static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Applies f to every element of a contiguous float64 tensor; plain loops keep NaN handling explicit.
template <typename F>
static at::Tensor map_elements(const at::Tensor& x, F f) {
  at::Tensor y = at::empty_like(x, at::MemoryFormat::Contiguous);
  const double* src = x.data_ptr<double>();
  double* dst = y.data_ptr<double>();
  for (int64_t i = 0, n = x.numel(); i < n; ++i) dst[i] = f(src[i]);
  return y;
}

OracleResult relu(const Inputs& in, const AttrMap&) {
  expect_count(in, 1);
  const at::Tensor x = value_input(in, 0, "x");
  // torch.relu keeps NaN (clamp_min propagates it); `v > 0 ? v : 0` alone would turn it into 0.
  return make_result(map_elements(x, [](double v) { return std::isnan(v) || v > 0 ? v : 0.0; }));
}

OracleResult gelu(const Inputs& in, const AttrMap&) {
  expect_count(in, 1);
  const at::Tensor x = value_input(in, 0, "x");
  const at::Tensor y = map_elements(x, [](double v) {
    // PyTorch computes x*0.5*(1+erf(x/sqrt2)), which is -inf*0 = NaN at -inf; match its NaN-ness.
    if (v == -std::numeric_limits<double>::infinity()) return kNaN;
    // erfc form: 1+erf(x/sqrt2) cancels to 0 for x < -8 even in fp64, erfc keeps the tiny tail.
    return 0.5 * v * std::erfc(-v / std::sqrt(2.0));
  });
  // Scale |x|: the standard formula 0.5*x*(1+erf) loses the tail to cancellation in 1+erf, an
  // absolute error of about 0.5*|x|*u of the working precision (the library's own gelu returns -0
  // there). The schema's tolerance admits that much, and not the tanh approximation's ~1e-3.
  return make_result(y, x.abs());
}

OracleResult sigmoid(const Inputs& in, const AttrMap&) {
  expect_count(in, 1);
  const at::Tensor x = value_input(in, 0, "x");
  // 1/(1+exp(-x)) has relative error of a few fp64 ulps for all x, including both infinities.
  return make_result(map_elements(x, [](double v) { return 1.0 / (1.0 + std::exp(-v)); }));
}

OracleResult add(const Inputs& in, const AttrMap&) {
  expect_count(in, 2);
  const at::Tensor a = value_input(in, 0, "a");
  const at::Tensor b = value_input(in, 1, "b");
  // Both operands are float64 here, so ATen's broadcasting add is one correctly rounded op.
  return make_result(at::add(a, b));
}

OracleResult clamp(const Inputs& in, const AttrMap& attrs) {
  expect_count(in, 1);
  const at::Tensor x = value_input(in, 0, "x");
  const double lo = attr_double(attrs, "lo");
  const double hi = attr_double(attrs, "hi");
  return make_result(map_elements(x, [lo, hi](double v) {
    // NaN in x or in a bound gives NaN (PyTorch's CUDA and vectorized CPU kernels);
    // lo > hi gives hi everywhere, as torch.clamp documents.
    if (std::isnan(v) || std::isnan(lo) || std::isnan(hi)) return kNaN;
    const double r = v < lo ? lo : v;
    return r > hi ? hi : r;
  }));
}

}  // namespace gauntlet::oracle_impl
