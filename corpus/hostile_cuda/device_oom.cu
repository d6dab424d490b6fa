// HOSTILE (CUDA containment): every call asks the caching allocator for 2^45 bytes (32 TiB) of
// device memory, far more than any GPU has. c10 throws its CUDA out-of-memory error ("CUDA out
// of memory. Tried to allocate 32.00 TiB ..."), which the worker reports as out of memory.
// Expected: every gate that runs the kernel reports error, out-of-memory.
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

}  // namespace

torch::Tensor forward(const torch::Tensor& x) {
  check_float_cuda(x);
  const c10::cuda::CUDAGuard guard(x.device());
  torch::Tensor huge = torch::empty({int64_t(1) << 45}, x.options().dtype(at::kByte));
  huge.fill_(0);  // never reached
  return torch::empty(x.sizes(), x.options());
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "hostile: device OOM (CUDA)"); }
