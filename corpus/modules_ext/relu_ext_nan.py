# Planted bug (CPU load_inline, KernelBench 19_ReLU style): ReLU as fmaxf(0, x) maps NaN to 0
# (5 of 5 ReLU solutions of a public leaderboard did this; KernelBench's randn inputs hold no NaN,
# so its check accepts it). Its extension and function are both called "matmul_cuda", as another
# solution's matmul might be: each module must get its own build.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <cmath>

torch::Tensor matmul_cuda(torch::Tensor x) {
  TORCH_CHECK(x.scalar_type() == torch::kFloat, "float32 only");
  torch::Tensor xc = x.contiguous();
  torch::Tensor out = torch::empty_like(xc);
  const float* in = xc.data_ptr<float>();
  float* o = out.data_ptr<float>();
  for (int64_t i = 0; i < xc.numel(); ++i) o[i] = std::fmax(0.0f, in[i]);
  return out;
}
"""

ext = load_inline(name="matmul_cuda", cpp_sources=cpp_source, functions=["matmul_cuda"], verbose=False)


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.matmul_cuda(x)


def get_inputs():
    return [torch.randn(16, 1024)]


def get_init_inputs():
    return []
