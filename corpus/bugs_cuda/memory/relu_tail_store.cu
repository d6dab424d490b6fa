// PLANTED BUG (memory): relu unrolled by two elements per thread. The tail load is guarded, the
// tail store is not: for an odd element count the thread owning the last pair stores relu(0) one
// element past the end of the output. Every in-bounds value is right, and the stray 2-4 bytes
// land in the caching allocator's rounding slack (blocks are multiples of 512 bytes and an odd
// count never fills one), so nothing crashes and every value gate passes. compute-sanitizer
// memcheck reports the invalid __global__ write when each tensor is its own cudaMalloc
// (PYTORCH_NO_CUDA_MEMORY_CACHING=1); a device canary after the output would see it too.
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
__global__ void relu_pairs_kernel(const scalar_t* __restrict__ in, scalar_t* __restrict__ out, int64_t n) {
  const int64_t pairs = (n + 1) / 2;
  const int64_t stride = int64_t(blockDim.x) * gridDim.x;
  for (int64_t p = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; p < pairs; p += stride) {
    const int64_t i = 2 * p;
    const scalar_t v0 = in[i];
    const scalar_t v1 = i + 1 < n ? in[i + 1] : scalar_t(0.0f);  // guarded load
    out[i] = (to_float(v0) < 0.0f) ? scalar_t(0.0f) : v0;
    out[i + 1] = (to_float(v1) < 0.0f) ? scalar_t(0.0f) : v1;  // BUG: unguarded store (i + 1 == n)
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
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "relu_tail_store_cuda", [&] {
    relu_pairs_kernel<scalar_t><<<blocks_for((n + 1) / 2, 256), 256, 0, stream>>>(xc.data_ptr<scalar_t>(),
                                                                                   out.data_ptr<scalar_t>(), n);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "relu, two per thread (CUDA)"); }
