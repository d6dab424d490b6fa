# Correct CPU load_inline module (KernelBench 19_ReLU style). Its extension is called "matmul_cuda",
# like dozens of unrelated KernelBench solutions: with a build directory keyed by the extension's
# name, it would load (or overwrite) another module's build. gauntlet builds it in its own.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>

torch::Tensor relu_forward(torch::Tensor x) {
  TORCH_CHECK(x.scalar_type() == torch::kFloat, "float32 only");
  torch::Tensor xc = x.contiguous();
  torch::Tensor out = torch::empty_like(xc);
  const float* in = xc.data_ptr<float>();
  float* o = out.data_ptr<float>();
  for (int64_t i = 0; i < xc.numel(); ++i) o[i] = in[i] < 0.0f ? 0.0f : in[i];  // NaN and -0.0 kept
  return out;
}
"""

ext = load_inline(name="matmul_cuda", cpp_sources=cpp_source, functions=["relu_forward"], verbose=False)


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.relu_forward(x)


def get_inputs():
    return [torch.randn(16, 1024)]


def get_init_inputs():
    return []
