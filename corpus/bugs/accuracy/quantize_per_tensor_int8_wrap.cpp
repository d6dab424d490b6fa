// gauntlet corpus, planted bug: quantize_per_tensor that casts to int8 without saturating.
// The control (controls/quantize_per_tensor.cpp) with the clamp left out: the level plus the zero
// point is converted to int32 and then to int8, which wraps (128 -> -128, 200 -> -56); +-inf and
// products past int32 go through an out-of-range float-to-int conversion (x86: INT_MIN, so 0).
// Values well inside the int8 range, as random data at a sensible scale gives, are right.
#include <torch/torch.h>

#include <cfenv>
#include <cmath>
#include <cstdint>

namespace {

// The int8 level of one value, rounded half to even. BUG: no saturation; the narrowing casts
// wrap (lrint's result for an out-of-range value is unspecified: LONG_MIN on x86).
inline int8_t quantize_one(float x, float inv_scale, int64_t zero_point) {
  const uint32_t level = static_cast<uint32_t>(std::lrint(x * inv_scale)) + static_cast<uint32_t>(zero_point);
  return static_cast<int8_t>(level);  // keeps the low 8 bits: 128 -> -128
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
