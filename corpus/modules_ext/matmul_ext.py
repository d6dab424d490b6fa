# Correct CPU load_inline matmul (KernelBench 2_Standard_matrix_multiplication style), its
# extension and function called "matmul_cuda" like many solutions'. Accumulates in double, so
# the accumulation gate's adversarial sums stay within the fp32 output's rounding.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>

torch::Tensor matmul_cuda(torch::Tensor a, torch::Tensor b) {
  TORCH_CHECK(a.scalar_type() == torch::kFloat && b.scalar_type() == torch::kFloat, "float32 only");
  TORCH_CHECK(a.dim() == 2 && b.dim() == 2 && a.size(1) == b.size(0), "[M, K] x [K, N]");
  torch::Tensor ac = a.contiguous(), bc = b.contiguous();
  const int64_t M = ac.size(0), K = ac.size(1), N = bc.size(1);
  torch::Tensor out = torch::empty({M, N}, ac.options());
  const float* A = ac.data_ptr<float>();
  const float* B = bc.data_ptr<float>();
  float* C = out.data_ptr<float>();
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double sum = 0;
      for (int64_t k = 0; k < K; ++k) sum += double(A[i * K + k]) * double(B[k * N + j]);
      C[i * N + j] = float(sum);
    }
  return out;
}
"""

ext = load_inline(name="matmul_cuda", cpp_sources=cpp_source, functions=["matmul_cuda"], verbose=False)


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
