// gauntlet corpus, planted bug: dequantize as x*scale - zero_point*scale in float32 (two roundings, then a cancellation).
// The control (controls/dequantize.cpp) with the zero point scaled on its own, as a fused
// "x * scale + bias" epilogue with bias = -zero_point * scale precomputed would do: x * s and
// zero_point * s each round to float32, and their difference keeps both errors. Where x is close
// to the zero point the result is small and the errors of the two large products are not: up to
// about 2^-16 of s (half an ulp of each product near 128 * s) on a result of s: 85 ulps at
// x = -126, zero point -127, scale 1/3, yet nothing to allclose at KernelBench's 1e-2. With zero point 0 (the
// default) it is exact.
#include <torch/torch.h>

#include <cmath>
#include <cstdint>

// dequantize(x int8, scale, zero_point): (x.int() - zero_point) * float32(scale) as float32.
torch::Tensor forward(const torch::Tensor& x, double scale, int64_t zero_point) {
  TORCH_CHECK(x.defined() && x.device().is_cpu() && x.layout() == at::kStrided, "dequantize: x must be a dense CPU tensor");
  TORCH_CHECK(x.scalar_type() == at::kChar, "dequantize: x must be int8");
  TORCH_CHECK(std::isfinite(scale) && scale > 0, "dequantize: scale must be finite and positive");
  TORCH_CHECK(zero_point >= -128 && zero_point <= 127, "dequantize: zero_point must lie in [-128, 127]");
  const float s = static_cast<float>(scale);
  TORCH_CHECK(s > 0 && std::isfinite(s), "dequantize: scale rounds to 0 or inf in float32");
  // BUG: the zero point's share, rounded to float32 on its own.
  const float zp_scaled = static_cast<float>(zero_point) * s;
  const torch::Tensor xc = x.contiguous();
  torch::Tensor out = torch::empty(xc.sizes(), xc.options().dtype(at::kFloat));
  const int8_t* q = xc.data_ptr<int8_t>();
  float* y = out.data_ptr<float>();
  const int64_t n = xc.numel();
  for (int64_t i = 0; i < n; ++i) {
    // BUG: x * s rounds, then the difference rounds again (the kernels build without -march, so
    // g++ does not contract this into an FMA, which would save one of the roundings).
    const float xs = static_cast<float>(q[i]) * s;
    y[i] = xs - zp_scaled;
  }
  return out;
}
