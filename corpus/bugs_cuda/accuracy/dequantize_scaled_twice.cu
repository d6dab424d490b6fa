// gauntlet corpus, planted CUDA bug: dequantize as x*scale - zero_point*scale in float32 (two roundings, then a cancellation).
// The CUDA control (controls_cuda/dequantize.cu) with the zero point scaled on its own, as a fused
// "x * scale + bias" epilogue with bias = -zero_point * scale precomputed on the host would do:
// x * s and zero_point * s each round to float32, and their difference keeps both errors. Where x
// is close to the zero point the result is small and the errors of the two large products are
// not: up to about 2^-16 of s on a result of s (85 ulps at x = -126, zero point -127, scale 1/3),
// yet nothing to allclose at KernelBench's 1e-2. With zero point 0 (the default) it is exact.
// CUDA twin of bugs/accuracy/dequantize_scaled_twice.
#include <torch/extension.h>

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace {

constexpr int kThreads = 256;

__global__ void dequantize_kernel(const int8_t* __restrict__ x, float* __restrict__ y, int64_t n, float scale,
                                  float zp_scaled) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    // BUG: x * s rounds, then the difference rounds again (the _rn intrinsics keep nvcc from
    // contracting them into an FMA, which would save one of the roundings, as the CPU twin's -O2
    // without -march does).
    y[i] = __fsub_rn(__fmul_rn(__int2float_rn(int(x[i])), scale), zp_scaled);
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
  // BUG: the zero point's share, rounded to float32 on its own.
  const float zp_scaled = static_cast<float>(zero_point) * s;
  dequantize_kernel<<<blocks, kThreads, 0, stream>>>(xc.data_ptr<int8_t>(), out.data_ptr<float>(), n, s, zp_scaled);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "dequantize of per-tensor qint8 data (CUDA)"); }
