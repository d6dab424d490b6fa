// PLANTED BUG (contract): relu clamps its input in place and returns the input tensor itself
// ("saves an allocation"). Values are right, but the output aliases the input (contract gate) and
// the caller's input is overwritten (memory gate: inputs unmodified). A non-contiguous input gets
// a contiguous copy from .contiguous(), which is then the (non-aliasing) output.
#include <torch/extension.h>

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

namespace {

template <typename T>
__device__ __forceinline__ float to_float(T v) {
  return static_cast<float>(v);
}
template <>
__device__ __forceinline__ float to_float<at::Half>(at::Half v) {
  return __half2float(*reinterpret_cast<const __half*>(&v));
}
template <>
__device__ __forceinline__ float to_float<at::BFloat16>(at::BFloat16 v) {
  return __bfloat162float(*reinterpret_cast<const __nv_bfloat16*>(&v));
}

void check_float_cuda(const torch::Tensor& x) {
  TORCH_CHECK(x.defined(), "input tensor is undefined");
  TORCH_CHECK(x.is_cuda(), "this kernel runs on CUDA tensors only");
  TORCH_CHECK(x.layout() == at::kStrided, "only strided (dense) tensors are supported");
  const auto s = x.scalar_type();
  TORCH_CHECK(s == at::kFloat || s == at::kHalf || s == at::kBFloat16,
              "unsupported dtype: expected float32, float16 or bfloat16");
}

int blocks_for(int64_t n, int threads) { return int(std::min<int64_t>((n + threads - 1) / threads, 65535)); }

template <typename scalar_t>
__global__ void relu_inplace_kernel(scalar_t* __restrict__ p, int64_t n) {
  const int64_t stride = int64_t(blockDim.x) * gridDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    if (to_float(p[i]) < 0.0f) p[i] = scalar_t(0.0f);
}

}  // namespace

torch::Tensor forward(const torch::Tensor& x) {
  check_float_cuda(x);
  const c10::cuda::CUDAGuard guard(x.device());
  torch::Tensor xc = x.contiguous();  // x itself when x is already contiguous
  const int64_t n = xc.numel();
  if (n == 0) return xc;
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "relu_inplace_cuda", [&] {
    relu_inplace_kernel<scalar_t><<<blocks_for(n, 256), 256, 0, stream>>>(xc.data_ptr<scalar_t>(), n);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return xc;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "relu, in place (CUDA)"); }
