// Planted bug for tools/gpu/probe_sanitizer.sh: relu that never writes the output's last element.
// Expected: the memory gate fails on the two device poisons ("never written (they hold the poison
// bytes)"), and initcheck sees the output copied back with uninitialized bytes.
#include <torch/extension.h>

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

namespace {
__global__ void relu_skip_last_kernel(const float* __restrict__ in, float* __restrict__ out, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i + 1 < n) out[i] = in[i] < 0.0f ? 0.0f : in[i];  // BUG: i == n-1 is never written
}
}  // namespace

torch::Tensor forward(const torch::Tensor& x) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == at::kFloat, "float32 CUDA tensors only");
  const c10::cuda::CUDAGuard guard(x.device());
  const torch::Tensor xc = x.contiguous();
  torch::Tensor out = torch::empty(xc.sizes(), xc.options());
  const int64_t n = xc.numel();
  if (n == 0) return out;
  const int threads = 256;
  const int blocks = int((n + threads - 1) / threads);
  relu_skip_last_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(xc.data_ptr<float>(), out.data_ptr<float>(), n);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "relu that skips the last element"); }
