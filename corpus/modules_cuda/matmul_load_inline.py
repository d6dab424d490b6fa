# Correct CUDA module (load_inline): a shared-memory tiled float32 GEMM (16 x 16 tiles, bounds
# checked on every load and store, float32 accumulation in a fixed order). Verified as matmul.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#define TILE 16

__global__ void matmul_kernel(const float* a, const float* b, float* c, int M, int K, int N) {
  __shared__ float as[TILE][TILE];
  __shared__ float bs[TILE][TILE];
  int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
  float acc = 0.f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    int ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;
    as[threadIdx.y][threadIdx.x] = (row < M && ka < K) ? a[(long)row * K + ka] : 0.f;
    bs[threadIdx.y][threadIdx.x] = (kb < K && col < N) ? b[(long)kb * N + col] : 0.f;
    __syncthreads();
    for (int k = 0; k < TILE; ++k) acc += as[threadIdx.y][k] * bs[k][threadIdx.x];
    __syncthreads();
  }
  if (row < M && col < N) c[(long)row * N + col] = acc;
}

torch::Tensor matmul_cuda(torch::Tensor a, torch::Tensor b) {
  TORCH_CHECK(a.is_cuda() && b.is_cuda() && a.scalar_type() == torch::kFloat && b.scalar_type() == torch::kFloat,
              "matmul_cuda: float32 CUDA tensors expected");
  TORCH_CHECK(a.dim() == 2 && b.dim() == 2 && a.size(1) == b.size(0), "matmul_cuda: [M,K] @ [K,N] expected");
  auto ac = a.contiguous(), bc = b.contiguous();
  int M = ac.size(0), K = ac.size(1), N = bc.size(1);
  auto c = torch::empty({M, N}, ac.options());
  if (M == 0 || N == 0) return c;
  if (K == 0) return c.zero_();
  dim3 threads(TILE, TILE), blocks((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
  matmul_kernel<<<blocks, threads>>>(ac.data_ptr<float>(), bc.data_ptr<float>(), c.data_ptr<float>(), M, K, N);
  return c;
}
"""
cpp_source = "torch::Tensor matmul_cuda(torch::Tensor a, torch::Tensor b);"

mm_ext = load_inline(name="gauntlet_matmul_ok", cpp_sources=cpp_source, cuda_sources=cuda_source,
                     functions=["matmul_cuda"], verbose=False)


class Model(nn.Module):
    def forward(self, A, B):
        return torch.matmul(A, B)


class ModelNew(nn.Module):
    def forward(self, A, B):
        return mm_ext.matmul_cuda(A, B)


def get_inputs():
    return [torch.randn(1024, 1024).cuda(), torch.randn(1024, 1024).cuda()]


def get_init_inputs():
    return []
