// PLANTED BUG (special-values): relu as fmaxf(x, 0.f), the "branch-free" idiom. fmaxf returns the
// other operand when one is NaN, so relu(NaN) = 0 where PyTorch's relu keeps NaN. Every finite
// and infinite input is right (fmaxf(-inf, 0) = 0, fmaxf(+inf, 0) = +inf), so only NaN inputs
// show it. float16/bfloat16 go through float (exact both ways).
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
__device__ __forceinline__ scalar_t from_float(float v) {
  return static_cast<scalar_t>(v);
}
template <>
__device__ __forceinline__ at::Half from_float<at::Half>(float v) {
  const __half h = __float2half_rn(v);
  return *reinterpret_cast<const at::Half*>(&h);
}
template <>
__device__ __forceinline__ at::BFloat16 from_float<at::BFloat16>(float v) {
  const __nv_bfloat16 h = __float2bfloat16_rn(v);
  return *reinterpret_cast<const at::BFloat16*>(&h);
}

template <typename scalar_t>
__global__ void relu_fmaxf_kernel(const scalar_t* __restrict__ in, scalar_t* __restrict__ out, int64_t n) {
  const int64_t stride = int64_t(blockDim.x) * gridDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = from_float<scalar_t>(fmaxf(to_float(in[i]), 0.0f));
}

}  // namespace

torch::Tensor forward(const torch::Tensor& x) {
  check_float_cuda(x);
  const c10::cuda::CUDAGuard guard(x.device());
  const torch::Tensor xc = x.contiguous();
  torch::Tensor out = torch::empty(xc.sizes(), xc.options());
  const int64_t n = xc.numel();
  if (n == 0) return out;
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "relu_fmaxf_cuda", [&] {
    relu_fmaxf_kernel<scalar_t><<<blocks_for(n, 256), 256, 0, stream>>>(xc.data_ptr<scalar_t>(),
                                                                         out.data_ptr<scalar_t>(), n);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "relu via fmaxf (CUDA)"); }
