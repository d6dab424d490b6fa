# Planted bug: a "fast path" that returns its input unchanged when the first element already lies
# inside [lo, hi] (as if one element spoke for the whole tensor): the other elements are not
# clamped, and the output is the input tensor itself.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, lo=-0.5, hi=0.5):
        super().__init__()
        self.lo, self.hi = lo, hi

    def forward(self, x):
        return torch.clamp(x, self.lo, self.hi)


class ModelNew(nn.Module):
    def __init__(self, lo=-0.5, hi=0.5):
        super().__init__()
        self.lo, self.hi = lo, hi

    def forward(self, x):
        first = float(x.reshape(-1)[0]) if x.numel() else 0.0
        if self.lo <= first <= self.hi:
            return x  # BUG: one element in range does not make the tensor in range
        lo = torch.full_like(x, self.lo)
        hi = torch.full_like(x, self.hi)
        return torch.where(x < lo, lo, torch.where(x > hi, hi, x))


def get_inputs():
    return [torch.randn(16, 1024)]


def get_init_inputs():
    return [-0.5, 0.5]
