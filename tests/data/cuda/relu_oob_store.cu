// Planted bug for tools/gpu/probe_sanitizer.sh: relu whose grid covers one element too many and
// stores it (an out-of-bounds __global__ write just past the output). Expected: the memory gate
// fails (compute-sanitizer memcheck: Invalid __global__ write ... 0 bytes after the end of a
// N-byte allocation); the plain gates may well pass (the store usually lands in cached slack).
#include <torch/extension.h>

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

namespace {
__global__ void relu_oob_kernel(const float* __restrict__ in, float* __restrict__ out, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] < 0.0f ? 0.0f : in[i];
  else if (i == n) out[i] = 0.0f;  // BUG: one past the end
}
}  // namespace

torch::Tensor forward(const torch::Tensor& x) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == at::kFloat, "float32 CUDA tensors only");
  const c10::cuda::CUDAGuard guard(x.device());
  const torch::Tensor xc = x.contiguous();
  torch::Tensor out = torch::empty(xc.sizes(), xc.options());
  const int64_t n = xc.numel();
  const int threads = 256;
  const int blocks = int((n + 1 + threads - 1) / threads);
  relu_oob_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(xc.data_ptr<float>(), out.data_ptr<float>(), n);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "relu with an out-of-bounds store"); }
