// gauntlet corpus, planted bug: dequantize (torch.dequantize of a per-tensor qint8 tensor) that flushes
// subnormal results to zero. PLANTED BUG: the control's one rounding, then every result below
// float32's smallest normal replaced by a zero of its sign, as a kernel built with flush-to-zero
// (fast math's .ftz on a GPU, MXCSR's FTZ bit on x86) returns it. Exact everywhere a result is normal:
// the KernelBench-style check's scale 0.1 never makes a subnormal, and the value gates leave results
// below the smallest normal to the subnormals gate, which runs this op with its subnormal scales.
#include <torch/torch.h>

#include <cfloat>
#include <cmath>
#include <cstdint>

torch::Tensor forward(const torch::Tensor& x, double scale, int64_t zero_point) {
  TORCH_CHECK(x.defined() && x.device().is_cpu() && x.layout() == at::kStrided, "dequantize: x must be a dense CPU tensor");
  TORCH_CHECK(x.scalar_type() == at::kChar, "dequantize: x must be int8");
  TORCH_CHECK(std::isfinite(scale) && scale > 0, "dequantize: scale must be finite and positive");
  TORCH_CHECK(zero_point >= -128 && zero_point <= 127, "dequantize: zero_point must lie in [-128, 127]");
  const float s = static_cast<float>(scale);
  TORCH_CHECK(s > 0 && std::isfinite(s), "dequantize: scale rounds to 0 or inf in float32");
  const int32_t zp = static_cast<int32_t>(zero_point);
  const torch::Tensor xc = x.contiguous();
  torch::Tensor out = torch::empty(xc.sizes(), xc.options().dtype(at::kFloat));
  const int8_t* q = xc.data_ptr<int8_t>();
  float* y = out.data_ptr<float>();
  const int64_t n = xc.numel();
  for (int64_t i = 0; i < n; ++i) {
    const float r = static_cast<float>(static_cast<int32_t>(q[i]) - zp) * s;
    y[i] = std::fabs(r) < FLT_MIN ? std::copysign(0.0f, r) : r;  // BUG: flush to zero
  }
  return out;
}
