// PLANTED BUG (statelessness): relu writes into one static device buffer, cudaMalloc'd on the
// first call and grown when a larger input comes, and returns it wrapped with torch::from_blob
// (no deleter): "no allocation per call". Each call's values are right, but every call returns
// the same memory, so the next call overwrites the result the caller still holds (the A, B, A'
// sequence sees A's output change; the worker sees the output alias the previous call's).
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
__global__ void relu_kernel(const scalar_t* __restrict__ in, scalar_t* __restrict__ out, int64_t n) {
  const int64_t stride = int64_t(blockDim.x) * gridDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const scalar_t v = in[i];
    out[i] = (to_float(v) < 0.0f) ? scalar_t(0.0f) : v;
  }
}

void* g_buffer = nullptr;  // BUG: one output buffer for every call
size_t g_capacity = 0;

}  // namespace

torch::Tensor forward(const torch::Tensor& x) {
  check_float_cuda(x);
  const c10::cuda::CUDAGuard guard(x.device());
  const torch::Tensor xc = x.contiguous();
  const int64_t n = xc.numel();
  const size_t bytes = std::max<size_t>(size_t(n) * xc.element_size(), 16);
  if (bytes > g_capacity) {
    if (g_buffer) C10_CUDA_CHECK(cudaFree(g_buffer));
    C10_CUDA_CHECK(cudaMalloc(&g_buffer, bytes));
    g_capacity = bytes;
  }
  torch::Tensor out = torch::from_blob(g_buffer, xc.sizes(), xc.options());
  if (n == 0) return out;
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "relu_static_cuda", [&] {
    relu_kernel<scalar_t><<<blocks_for(n, 256), 256, 0, stream>>>(xc.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), n);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "relu into a static buffer (CUDA)"); }
