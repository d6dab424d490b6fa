# Correct unmapped CUDA module (KernelBench level-2 style "Conv2d + bias + ReLU"): one load_inline
# kernel does the whole direct convolution, the conv's bias, the extra bias and the ReLU (NaN kept).
# Verified against its own Model in float64 on the CPU (the module oracle), with ModelNew's weights.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void conv_bias_relu_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                      const float* __restrict__ cb, const float* __restrict__ b,
                                      float* __restrict__ y, int N, int C, int H, int W, int O, int K,
                                      int OH, int OW) {
  long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
  long total = (long)N * O * OH * OW;
  if (i >= total) return;
  int ow = i % OW, oh = (i / OW) % OH, o = (i / ((long)OW * OH)) % O, n = i / ((long)OW * OH * O);
  float acc = cb[o];
  for (int c = 0; c < C; ++c)
    for (int kh = 0; kh < K; ++kh)
      for (int kw = 0; kw < K; ++kw)
        acc += x[(((long)n * C + c) * H + oh + kh) * W + ow + kw] * w[((o * C + c) * K + kh) * K + kw];
  float v = acc + b[o];
  y[i] = (v > 0.f || v != v) ? v : 0.f;
}

torch::Tensor conv_bias_relu(torch::Tensor x, torch::Tensor w, torch::Tensor cb, torch::Tensor b) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat && x.dim() == 4, "float32 CUDA NCHW input expected");
  auto xc = x.contiguous(), wc = w.contiguous(), cbc = cb.contiguous(), bc = b.contiguous();
  int N = xc.size(0), C = xc.size(1), H = xc.size(2), W = xc.size(3), O = wc.size(0), K = wc.size(2);
  TORCH_CHECK(wc.size(1) == C && H >= K && W >= K, "shapes do not match the convolution");
  int OH = H - K + 1, OW = W - K + 1;
  auto y = torch::empty({N, O, OH, OW}, xc.options());
  long total = (long)N * O * OH * OW;
  if (total == 0) return y;
  int threads = 256;
  long blocks = (total + threads - 1) / threads;
  conv_bias_relu_kernel<<<blocks, threads>>>(xc.data_ptr<float>(), wc.data_ptr<float>(), cbc.data_ptr<float>(),
                                             bc.data_ptr<float>(), y.data_ptr<float>(), N, C, H, W, O, K, OH, OW);
  return y;
}
"""
cpp_source = "torch::Tensor conv_bias_relu(torch::Tensor x, torch::Tensor w, torch::Tensor cb, torch::Tensor b);"

ext = load_inline(name="fused_conv", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["conv_bias_relu"], verbose=False)


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        return torch.relu(self.conv(x) + self.bias)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        return ext.conv_bias_relu(x, self.conv.weight, self.conv.bias, self.bias.reshape(-1))


def get_inputs():
    return [torch.randn(8, 3, 18, 18)]


def get_init_inputs():
    return [3, 16, 3, (16, 1, 1)]
