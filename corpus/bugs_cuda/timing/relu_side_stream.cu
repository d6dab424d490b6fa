// PLANTED BUG (timing): relu launched on a stream the kernel creates itself (cudaStreamNonBlocking,
// created once) "to overlap with other work". The side stream waits for the current stream (so
// the input, e.g. a .contiguous() copy, is ready) but is never joined back: the call returns while
// the kernel may still run, and CUDA events recorded on the current stream around the call time
// almost nothing. The worker synchronizes the whole device after each call, so every output the
// gates read is complete and right; only timing (far below the schema's physical floor, bytes over
// peak bandwidth) is implausible. A real caller reading `out` on the current stream would race.
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

cudaStream_t side_stream() {
  static cudaStream_t s = [] {
    cudaStream_t t = nullptr;
    C10_CUDA_CHECK(cudaStreamCreateWithFlags(&t, cudaStreamNonBlocking));
    return t;
  }();
  return s;
}

}  // namespace

torch::Tensor forward(const torch::Tensor& x) {
  check_float_cuda(x);
  const c10::cuda::CUDAGuard guard(x.device());
  const torch::Tensor xc = x.contiguous();
  torch::Tensor out = torch::empty(xc.sizes(), xc.options());
  const int64_t n = xc.numel();
  if (n == 0) return out;
  cudaStream_t current = at::cuda::getCurrentCUDAStream();
  cudaStream_t side = side_stream();
  cudaEvent_t ready;
  C10_CUDA_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
  C10_CUDA_CHECK(cudaEventRecord(ready, current));
  C10_CUDA_CHECK(cudaStreamWaitEvent(side, ready, 0));  // joined in...
  C10_CUDA_CHECK(cudaEventDestroy(ready));
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "relu_side_stream_cuda", [&] {
    relu_kernel<scalar_t><<<blocks_for(n, 256), 256, 0, side>>>(xc.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), n);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;  // BUG: ...but never joined out (no event recorded on `side` for `current` to wait on)
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "relu on a private stream (CUDA)"); }
