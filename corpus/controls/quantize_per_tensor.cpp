// gauntlet corpus, correct control: quantize_per_tensor (SPEC's next ops).
// A reference-grade native CPU kernel (SPEC kernel form 1): plain loops over data_ptr after
// .contiguous(), torch's own float32 arithmetic (the float32 reciprocal of the float32 scale, one
// float32 product, round half to even, the zero point, saturation), out-of-contract inputs
// rejected with TORCH_CHECK. Expected to pass every gate.
#include <torch/torch.h>

#include <cfenv>
#include <cmath>
#include <cstdint>

namespace {

// The int8 level of one value: nearbyint rounds half to even in the default rounding mode, and
// the comparisons saturate before any conversion, so +-inf (and a product overflowing to inf)
// come out as the limits instead of an undefined float-to-int cast.
inline int8_t quantize_one(float x, float inv_scale, int64_t zero_point) {
  const double level = std::nearbyint(static_cast<double>(x * inv_scale)) + static_cast<double>(zero_point);
  if (level <= -128.0) return -128;
  if (level >= 127.0) return 127;
  return static_cast<int8_t>(level);
}

}  // namespace

// quantize_per_tensor(x float32, scale, zero_point): torch.quantize_per_tensor(x, scale,
// zero_point, torch.qint8).int_repr().
torch::Tensor forward(const torch::Tensor& x, double scale, int64_t zero_point) {
  TORCH_CHECK(x.defined() && x.device().is_cpu() && x.layout() == at::kStrided, "quantize_per_tensor: x must be a dense CPU tensor");
  TORCH_CHECK(x.scalar_type() == at::kFloat, "quantize_per_tensor: x must be float32");
  TORCH_CHECK(std::isfinite(scale) && scale > 0, "quantize_per_tensor: scale must be finite and positive");
  TORCH_CHECK(zero_point >= -128 && zero_point <= 127, "quantize_per_tensor: zero_point must lie in [-128, 127]");
  const float inv_scale = 1.0f / static_cast<float>(scale);
  TORCH_CHECK(std::isfinite(inv_scale), "quantize_per_tensor: 1/scale overflows float32");
  TORCH_CHECK(std::fegetround() == FE_TONEAREST, "quantize_per_tensor: the rounding mode must be to-nearest");
  const torch::Tensor xc = x.contiguous();
  torch::Tensor out = torch::empty(xc.sizes(), xc.options().dtype(at::kChar));
  const float* in = xc.data_ptr<float>();
  int8_t* q = out.data_ptr<int8_t>();
  const int64_t n = xc.numel();
  for (int64_t i = 0; i < n; ++i) {
    TORCH_CHECK(!std::isnan(in[i]), "quantize_per_tensor: NaN has no quantized value");
    q[i] = quantize_one(in[i], inv_scale, zero_point);
  }
  return out;
}
