// gauntlet corpus, correct CUDA control: dequantize (torch.dequantize of a per-tensor qint8 tensor).
// SPEC kernel form 1, .cu, torch.utils.cpp_extension style. One thread per element (grid-stride):
// the difference x - zero_point in int (exact, [-255, 255]), converted to float exactly, times
// the float32 scale with __fmul_rn (one rounding to nearest even, never contracted, subnormals
// kept: no fast math). Expected to pass every gate on a CUDA device.
#include <torch/extension.h>

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace {

constexpr int kThreads = 256;

__global__ void dequantize_kernel(const int8_t* __restrict__ x, float* __restrict__ y, int64_t n, float scale,
                                  int zero_point) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int d = int(x[i]) - zero_point;  // exact in int, and in float (9 bits)
    y[i] = __fmul_rn(__int2float_rn(d), scale);
  }
}

}  // namespace

torch::Tensor forward(const torch::Tensor& x, double scale, int64_t zero_point) {
  TORCH_CHECK(x.defined() && x.is_cuda() && x.layout() == at::kStrided, "dequantize: x must be a dense CUDA tensor");
  TORCH_CHECK(x.scalar_type() == at::kChar, "dequantize: x must be int8");
  TORCH_CHECK(std::isfinite(scale) && scale > 0, "dequantize: scale must be finite and positive");
  TORCH_CHECK(zero_point >= -128 && zero_point <= 127, "dequantize: zero_point must lie in [-128, 127]");
  // torch dequantizes with the float32 rounding of the double scale.
  const float s = static_cast<float>(scale);
  TORCH_CHECK(s > 0 && std::isfinite(s), "dequantize: scale rounds to 0 or inf in float32");
  const c10::cuda::CUDAGuard guard(x.device());
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const torch::Tensor xc = x.contiguous();
  torch::Tensor out = torch::empty(xc.sizes(), xc.options().dtype(at::kFloat));
  const int64_t n = xc.numel();
  if (n == 0) return out;
  const int blocks = int(std::min<int64_t>((n + kThreads - 1) / kThreads, 65535));
  dequantize_kernel<<<blocks, kThreads, 0, stream>>>(xc.data_ptr<int8_t>(), out.data_ptr<float>(), n, s,
                                                     int(zero_point));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "dequantize of per-tensor qint8 data (CUDA)"); }
