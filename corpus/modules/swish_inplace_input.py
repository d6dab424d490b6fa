# Planted bug (unmapped module, an in-place input write): a Swish that multiplies its input by the
# sigmoid in place to save an allocation, then returns a copy: the result is right, the caller's
# tensor is overwritten.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * torch.sigmoid(x)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        s = 1 / (1 + torch.exp(-x))
        return x.mul_(s).clone()  # BUG: writes the caller's input


def get_inputs():
    return [torch.randn(16, 4096)]


def get_init_inputs():
    return []
