// HOSTILE (sandbox containment): calls std::abort() -> SIGABRT.
// Expected: every gate reports error/crash.
#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>

torch::Tensor forward(const torch::Tensor& x) {
  std::abort();
  torch::Tensor xc = x.contiguous();
  torch::Tensor out = torch::empty(xc.sizes(), xc.options());
  const int64_t n = xc.numel();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "hostile_relu", [&] {
    const scalar_t* in = xc.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    for (int64_t i = 0; i < n; ++i) {
      const float v = static_cast<float>(in[i]);
      o[i] = (std::isnan(v) || v > 0.0f) ? in[i] : scalar_t(0.0f);
    }
  });
  return out;
}
