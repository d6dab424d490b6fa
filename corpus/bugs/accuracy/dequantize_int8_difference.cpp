// gauntlet corpus, planted bug: dequantize taking x - zero_point in int8 arithmetic, which wraps.
// The control (controls/dequantize.cpp) with the difference narrowed to int8 before it is scaled,
// as a kernel keeping everything in the input's type would: x - zero_point lies in [-255, 255],
// and outside [-128, 127] it wraps by 256 (x = -100, zero point 100: -200 -> 56). With zero point
// 0 (the default, symmetric quantization's) the difference is x itself and nothing wraps.
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
  const int8_t zp = static_cast<int8_t>(zero_point);  // exact: the zero point lies in int8
  const torch::Tensor xc = x.contiguous();
  torch::Tensor out = torch::empty(xc.sizes(), xc.options().dtype(at::kFloat));
  const int8_t* q = xc.data_ptr<int8_t>();
  float* y = out.data_ptr<float>();
  const int64_t n = xc.numel();
  for (int64_t i = 0; i < n; ++i) {
    // BUG: the difference narrowed to int8 keeps its low 8 bits (modular since C++20, and what
    // g++ does before): -200 becomes 56, 255 becomes -1.
    const int8_t d = static_cast<int8_t>(q[i] - zp);
    y[i] = static_cast<float>(d) * s;
  }
  return out;
}
