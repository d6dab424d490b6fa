// PLANTED BUG (memory): relu with four elements per thread ("vectorized"). Each thread loads its
// four inputs unconditionally and masks only the stores, so the last group reads up to three
// elements past the end of x. Every stored value is right; the over-read lands in the caching
// allocator's slack and never faults. compute-sanitizer memcheck reports the invalid __global__
// read when each tensor is its own cudaMalloc (PYTORCH_NO_CUDA_MEMORY_CACHING=1). Four scalar
// loads, not a float4, so views with any storage offset stay aligned.
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
__global__ void relu_vec4_kernel(const scalar_t* __restrict__ in, scalar_t* __restrict__ out, int64_t n) {
  const int64_t groups = (n + 3) / 4;
  const int64_t stride = int64_t(blockDim.x) * gridDim.x;
  for (int64_t g = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; g < groups; g += stride) {
    const int64_t i = 4 * g;
    scalar_t v[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) v[j] = in[i + j];  // BUG: no i + j < n guard on the load
#pragma unroll
    for (int j = 0; j < 4; ++j)
      if (i + j < n) out[i + j] = (to_float(v[j]) < 0.0f) ? scalar_t(0.0f) : v[j];
  }
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
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "relu_vec4_cuda", [&] {
    relu_vec4_kernel<scalar_t><<<blocks_for((n + 3) / 4, 256), 256, 0, stream>>>(xc.data_ptr<scalar_t>(),
                                                                                  out.data_ptr<scalar_t>(), n);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "relu, four per thread (CUDA)"); }
