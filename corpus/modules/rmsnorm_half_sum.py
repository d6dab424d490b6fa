# Planted bug (unmapped module, half-precision accumulation): the RMSNorm of 36_RMSNorm_ with the
# sum of squares accumulated in float16 for float32 inputs: 11 significant bits in every partial
# sum, and squares past 65504 overflow to inf (the row then normalizes to zero).
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
        ss = (x * x).half().sum(dim=1, keepdim=True).to(x.dtype)  # BUG: float16 accumulator
        return x * torch.rsqrt(ss / self.num_features + self.eps)


def get_inputs():
    return [torch.randn(4, 32, 16, 16)]


def get_init_inputs():
    return [32]
