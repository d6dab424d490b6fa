# Correct unmapped module (KernelBench level-1 36_RMSNorm_, a near miss of rms_norm: it normalizes
# dim 1 of [B, F, d1, d2], without a weight): checked against its own Model in float64. ModelNew
# sums the squares itself (aten::sum) instead of Model's aten::mean.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, num_features, eps=1e-5):
        super().__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x):
        rms = torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + self.eps)
        return x / rms


class ModelNew(nn.Module):
    def __init__(self, num_features, eps=1e-5):
        super().__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x):
        ms = (x * x).sum(dim=1, keepdim=True) / self.num_features
        return x * torch.rsqrt(ms + self.eps)


def get_inputs():
    return [torch.randn(4, 32, 16, 16)]


def get_init_inputs():
    return [32]
