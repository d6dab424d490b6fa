# The CUDA twin of contracts/relu_problem_sized_checked: the same whole-blocks-only grid as
# relu_problem_sized_unchecked, with the refusal its narrow contract needs: a size that is not a
# multiple of 256 raises. Exact at the problem's own x [16, 16384]: passes every gate.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y) {
  long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
  float v = x[i];
  y[i] = (v > 0.f || v != v) ? v : 0.f;
}

torch::Tensor relu_cuda(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat, "relu_cuda: float32 CUDA tensor expected");
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  TORCH_CHECK(xc.numel() % 256 == 0, "relu_cuda: the element count must be a multiple of 256");
  long blocks = xc.numel() / 256;
  if (blocks > 0) relu_kernel<<<blocks, 256>>>(xc.data_ptr<float>(), y.data_ptr<float>());
  return y;
}
"""
cpp_source = "torch::Tensor relu_cuda(torch::Tensor x);"

relu_ext = load_inline(name="gauntlet_relu_problem_checked", cpp_sources=cpp_source, cuda_sources=cuda_source,
                       functions=["relu_cuda"], verbose=False)


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


class ModelNew(nn.Module):
    def forward(self, x):
        return relu_ext.relu_cuda(x)


def get_inputs():
    return [torch.randn(16, 16384).cuda()]


def get_init_inputs():
    return []
