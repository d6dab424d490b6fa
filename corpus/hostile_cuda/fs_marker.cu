// HOSTILE (filesystem containment, CUDA): the CUDA twin of hostile/fs_marker.cpp. The first call in
// each child leaves a marker file in every place outside its private /tmp a later child could read
// (/var/tmp, /dev/shm, /run/lock, the module build cache, $HOME, /root, this source's directory),
// and every call raises if it finds a marker another child left; then a correct relu on the GPU.
// A CUDA child keeps its GPU nodes and its own /proc, and its filesystem is locked as a CPU
// child's. Expected: pass; a sandbox that leaks makes every gate after the first an error
// (runtime-error, "found a marker"). tests/e2e/fs_containment_test.cpp checks the host afterwards.
#include <torch/extension.h>

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "../hostile/fs_leak.h"

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

template <typename scalar_t>
__global__ void relu_kernel(const scalar_t* __restrict__ in, scalar_t* __restrict__ out, int64_t n) {
  const int64_t stride = int64_t(blockDim.x) * gridDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const scalar_t v = in[i];
    // The result is the input or zero: no rounding. A NaN compares false and passes through.
    out[i] = (to_float(v) < 0.0f) ? scalar_t(0.0f) : v;
  }
}

}  // namespace

torch::Tensor forward(const torch::Tensor& x) {
  static const std::vector<std::string> where = fs_leak::places(__FILE__);
  std::string from;
  fs_leak::foreign(where, "gauntlet-hostile-fs-marker-cuda", &from);
  TORCH_CHECK(from.empty(), "found a marker another sandboxed child left: ", from);
  static const std::string wrote = fs_leak::leave(where, "gauntlet-hostile-fs-marker-cuda", "marker");
  (void)wrote;
  TORCH_CHECK(x.defined(), "input tensor is undefined");
  TORCH_CHECK(x.is_cuda(), "this kernel runs on CUDA tensors only");
  TORCH_CHECK(x.layout() == at::kStrided, "only strided (dense) tensors are supported");
  const auto s = x.scalar_type();
  TORCH_CHECK(s == at::kFloat || s == at::kHalf || s == at::kBFloat16,
              "unsupported dtype: expected float32, float16 or bfloat16");
  const c10::cuda::CUDAGuard guard(x.device());
  const torch::Tensor xc = x.contiguous();
  torch::Tensor out = torch::empty(xc.sizes(), xc.options());
  const int64_t n = xc.numel();
  if (n == 0) return out;
  const int threads = 256;
  const int64_t want = (n + threads - 1) / threads;
  const int blocks = int(std::min<int64_t>(want, 65535));
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "relu_cuda", [&] {
    relu_kernel<scalar_t><<<blocks, threads, 0, stream>>>(xc.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), n);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "relu leaving filesystem markers (CUDA)"); }
