# The CUDA twin of contracts/relu_problem_sized_unchecked (KernelBench level-1 19_ReLU at its own
# size, x [16, 16384], "shapes": "get_inputs"): the grid covers whole blocks of 256 elements only,
# so a size that is not a multiple of 256 keeps torch.empty_like's garbage in its tail. Exact at the
# problem's shape (its contract), wrong past it: unsafe, never fail.
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
  long blocks = xc.numel() / 256;  // whole blocks only: the tail (numel % 256 elements) gets no thread
  if (blocks > 0) relu_kernel<<<blocks, 256>>>(xc.data_ptr<float>(), y.data_ptr<float>());
  return y;
}
"""
cpp_source = "torch::Tensor relu_cuda(torch::Tensor x);"

relu_ext = load_inline(name="gauntlet_relu_problem_unchecked", cpp_sources=cpp_source, cuda_sources=cuda_source,
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
