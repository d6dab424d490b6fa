// HOSTILE (CUDA containment): every call launches a kernel that stores through a wild device
// pointer (address 0x10, never mapped) before the real relu. The launch itself succeeds; the
// fault surfaces asynchronously as cudaErrorIllegalAddress ("an illegal memory access was
// encountered") when the worker synchronizes after the call, and the CUDA context is unusable
// from then on (sticky error). Expected: every gate that runs the kernel reports error,
// runtime-error ("CUDA error after the call: ..."), and gauntlet carries on with a fresh child.
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

__global__ void wild_store_kernel(float* p) { p[threadIdx.x] = 42.0f; }

template <typename scalar_t>
__global__ void relu_kernel(const scalar_t* __restrict__ in, scalar_t* __restrict__ out, int64_t n) {
  const int64_t stride = int64_t(blockDim.x) * gridDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const scalar_t v = in[i];
    out[i] = (to_float(v) < 0.0f) ? scalar_t(0.0f) : v;
  }
}

}  // namespace

torch::Tensor forward(const torch::Tensor& x) {
  check_float_cuda(x);
  const c10::cuda::CUDAGuard guard(x.device());
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  float* volatile wild = reinterpret_cast<float*>(uintptr_t(0x10));
  wild_store_kernel<<<1, 32, 0, stream>>>(wild);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  const torch::Tensor xc = x.contiguous();
  torch::Tensor out = torch::empty(xc.sizes(), xc.options());
  const int64_t n = xc.numel();
  if (n == 0) return out;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "hostile_relu_cuda", [&] {
    relu_kernel<scalar_t><<<blocks_for(n, 256), 256, 0, stream>>>(xc.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), n);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "hostile: illegal address (CUDA)"); }
