// Planted bug for tools/gpu/probe_sanitizer.sh: a "CUDA kernel" that copies its input to the host,
// computes relu there with ATen and copies the result back. Expected: the provenance gate fails
// ("the kernel copied input 'x' (cuda:0 -> cpu, N bytes, aten::copy_) to the host inside the call").
#include <torch/extension.h>

torch::Tensor forward(const torch::Tensor& x) {
  TORCH_CHECK(x.is_cuda(), "CUDA tensors only");
  const torch::Tensor host = x.cpu();  // BUG: computes on the host
  return host.clamp_min(0).to(x.device());
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "relu computed on the host"); }
