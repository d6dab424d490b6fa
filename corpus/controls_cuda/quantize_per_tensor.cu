// gauntlet corpus, correct CUDA control: quantize_per_tensor (SPEC kernel form 1, .cu,
// torch.utils.cpp_extension style). One thread per element (grid-stride): torch's float32
// arithmetic, x * (1/scale) with the reciprocal of the float32 scale, __float2int_rn (round half to
// even) on the product clamped first (so +-inf and products past the int range saturate instead of
// converting out of range), the zero point, saturation to [-128, 127]. Expected to pass every gate on
// a CUDA device.
#include <torch/extension.h>

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace {

constexpr int kThreads = 256;

__global__ void quantize_kernel(const float* __restrict__ x, int8_t* __restrict__ q, int64_t n, float inv_scale,
                                int zero_point) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    // Clamped to +-512 before the conversion: every level past the int8 range saturates anyway,
    // and __float2int_rn of inf or of a huge product would not (fminf/fmaxf pass no NaN here: the
    // contract has none).
    const float p = fminf(fmaxf(x[i] * inv_scale, -512.0f), 512.0f);
    const int level = __float2int_rn(p) + zero_point;  // round half to even, as nearbyint
    q[i] = static_cast<int8_t>(min(max(level, -128), 127));
  }
}

}  // namespace

torch::Tensor forward(const torch::Tensor& x, double scale, int64_t zero_point) {
  TORCH_CHECK(x.defined() && x.is_cuda() && x.layout() == at::kStrided, "quantize_per_tensor: x must be a dense CUDA tensor");
  TORCH_CHECK(x.scalar_type() == at::kFloat, "quantize_per_tensor: x must be float32");
  TORCH_CHECK(std::isfinite(scale) && scale > 0, "quantize_per_tensor: scale must be finite and positive");
  TORCH_CHECK(zero_point >= -128 && zero_point <= 127, "quantize_per_tensor: zero_point must lie in [-128, 127]");
  const float inv_scale = 1.0f / static_cast<float>(scale);
  TORCH_CHECK(std::isfinite(inv_scale), "quantize_per_tensor: 1/scale overflows float32");
  const c10::cuda::CUDAGuard guard(x.device());
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const torch::Tensor xc = x.contiguous();
  torch::Tensor out = torch::empty(xc.sizes(), xc.options().dtype(at::kChar));
  const int64_t n = xc.numel();
  if (n == 0) return out;
  const int blocks = int(std::min<int64_t>((n + kThreads - 1) / kThreads, 65535));
  quantize_kernel<<<blocks, kThreads, 0, stream>>>(xc.data_ptr<float>(), out.data_ptr<int8_t>(), n, inv_scale,
                                                   int(zero_point));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "quantize_per_tensor to int8 (CUDA)"); }
