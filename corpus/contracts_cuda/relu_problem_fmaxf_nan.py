# The CUDA twin of contracts/relu_problem_fmax_nan: ReLU as fmaxf(0, x) (5 of 5 public leaderboard
# ReLU solutions), which returns 0 for NaN where torch.relu propagates it, at the problem's own
# x [16, 16384]. Inside the contract (values are free): fail, named nan-dropped.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, long n) {
  long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaxf(0.f, x[i]);
}

torch::Tensor relu_cuda(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat, "relu_cuda: float32 CUDA tensor expected");
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  long n = xc.numel();
  long blocks = (n + 255) / 256;
  if (blocks > 0) relu_kernel<<<blocks, 256>>>(xc.data_ptr<float>(), y.data_ptr<float>(), n);
  return y;
}
"""
cpp_source = "torch::Tensor relu_cuda(torch::Tensor x);"

relu_ext = load_inline(name="gauntlet_relu_problem_fmaxf", cpp_sources=cpp_source, cuda_sources=cuda_source,
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
