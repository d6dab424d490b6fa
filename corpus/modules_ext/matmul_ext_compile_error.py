# Planted build failure (CPU load_inline): the C++ source calls a function that does not exist.
# One build-error for the module, with the compiler's first error lines, not a load-error per gate.
# verbose=True, as 351 of the KernelBench leaderboard's 383 solutions pass it: torch then prints the
# compiler's output instead of putting it in its error, and the build step must still show it.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>

torch::Tensor matmul_cuda(torch::Tensor a, torch::Tensor b) {
  return gauntlet_no_such_function(a, b);
}
"""

ext = load_inline(name="matmul_cuda", cpp_sources=cpp_source, functions=["matmul_cuda"], verbose=True)


class Model(nn.Module):
    def forward(self, A, B):
        return torch.matmul(A, B)


class ModelNew(nn.Module):
    def forward(self, A, B):
        return ext.matmul_cuda(A, B)


def get_inputs():
    return [torch.randn(64, 32), torch.randn(32, 48)]


def get_init_inputs():
    return []
