// gauntlet corpus, correct control: dequantize (torch.dequantize of a per-tensor qint8 tensor).
// A reference-grade native CPU kernel (SPEC kernel form 1): plain loops over data_ptr after
// .contiguous(), torch's own arithmetic (the exact integer difference x - zero_point, converted to
// float32 exactly, times the float32 scale: one rounding), out-of-contract inputs rejected with
// TORCH_CHECK. Expected to pass every gate.
#include <torch/torch.h>

#include <cmath>
#include <cstdint>

// dequantize(x int8, scale, zero_point): (x.int() - zero_point) * float32(scale) as float32.
torch::Tensor forward(const torch::Tensor& x, double scale, int64_t zero_point) {
  TORCH_CHECK(x.defined() && x.device().is_cpu() && x.layout() == at::kStrided, "dequantize: x must be a dense CPU tensor");
  TORCH_CHECK(x.scalar_type() == at::kChar, "dequantize: x must be int8");
  TORCH_CHECK(std::isfinite(scale) && scale > 0, "dequantize: scale must be finite and positive");
  TORCH_CHECK(zero_point >= -128 && zero_point <= 127, "dequantize: zero_point must lie in [-128, 127]");
  // torch dequantizes with the float32 rounding of the double scale.
  const float s = static_cast<float>(scale);
  TORCH_CHECK(s > 0 && std::isfinite(s), "dequantize: scale rounds to 0 or inf in float32");
  const int32_t zp = static_cast<int32_t>(zero_point);
  const torch::Tensor xc = x.contiguous();
  torch::Tensor out = torch::empty(xc.sizes(), xc.options().dtype(at::kFloat));
  const int8_t* q = xc.data_ptr<int8_t>();
  float* y = out.data_ptr<float>();
  const int64_t n = xc.numel();
  for (int64_t i = 0; i < n; ++i) {
    // The difference in int32 is exact ([-255, 255]) and so is its float32; the product rounds once.
    const int32_t d = static_cast<int32_t>(q[i]) - zp;
    y[i] = static_cast<float>(d) * s;
  }
  return out;
}
