# Planted bug: the softmax denominator is accumulated in half precision (float16) for float32 inputs:
# each exp term and the running sum carry 11 significant bits, so long rows lose several digits.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.softmax(x, dim=self.dim)


class ModelNew(nn.Module):
    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        m = x.amax(dim=self.dim, keepdim=True)
        e = (x - m).exp()
        s = e.half().sum(dim=self.dim, keepdim=True).to(x.dtype)  # BUG: half-precision accumulation
        return e / s


def get_inputs():
    return [torch.randn(16, 4096)]


def get_init_inputs():
    return [-1]
