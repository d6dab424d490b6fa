# Planted bug (unmapped CUDA module, KernelBench level-3 style attention block): the softmax inside
# the fused kernel skips the row maximum. On randn inputs the scores stay far below exp's float32
# overflow, so KernelBench's check accepts it; scaled inputs overflow exp to inf and the outputs
# become NaN where Model's are finite (accuracy). Its extension is named "attention" too.
import math

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void attention_kernel(const float* __restrict__ q, const float* __restrict__ k,
                                 const float* __restrict__ v, float* __restrict__ out,
                                 long BH, int L, int D, float scale) {
  long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= BH * L * D) return;
  int e = i % D, row = (i / D) % L;
  long bh = i / ((long)D * L);
  const float* qi = q + (bh * L + row) * D;
  const float* kb = k + bh * L * D;
  const float* vb = v + bh * L * D;
  const float m = 0.f;  // the bug: no row maximum
  float sum = 0.f, acc = 0.f;
  for (int j = 0; j < L; ++j) {
    float s = 0.f;
    for (int d = 0; d < D; ++d) s += qi[d] * kb[(long)j * D + d];
    float p = expf(s * scale - m);
    sum += p;
    acc += p * vb[(long)j * D + e];
  }
  out[i] = acc / sum;
}

torch::Tensor attention(torch::Tensor q, torch::Tensor k, torch::Tensor v) {
  TORCH_CHECK(q.is_cuda() && q.scalar_type() == torch::kFloat && q.dim() == 4, "float32 CUDA [B, H, L, D] expected");
  auto qc = q.contiguous(), kc = k.contiguous(), vc = v.contiguous();
  long BH = qc.size(0) * qc.size(1);
  int L = qc.size(2), D = qc.size(3);
  auto out = torch::empty_like(qc);
  long total = BH * L * D;
  if (total == 0) return out;
  int threads = 256;
  long blocks = (total + threads - 1) / threads;
  attention_kernel<<<blocks, threads>>>(qc.data_ptr<float>(), kc.data_ptr<float>(), vc.data_ptr<float>(),
                                        out.data_ptr<float>(), BH, L, D, 1.0f / sqrtf((float)D));
  return out;
}
"""
cpp_source = "torch::Tensor attention(torch::Tensor q, torch::Tensor k, torch::Tensor v);"

ext = load_inline(name="attention", cpp_sources=cpp_source, cuda_sources=cuda_source, functions=["attention"],
                  verbose=False)


class Model(nn.Module):
    def forward(self, q, k, v):
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))
        return torch.matmul(torch.softmax(scores, dim=-1), v)


class ModelNew(nn.Module):
    def forward(self, q, k, v):
        return ext.attention(q, k, v)


def get_inputs():
    return [torch.randn(2, 4, 64, 32), torch.randn(2, 4, 64, 32), torch.randn(2, 4, 64, 32)]


def get_init_inputs():
    return []
