# Planted bug: the module subtracts the row maximum from its input in place (x.sub_), so the
# caller's tensor is overwritten; the returned softmax itself is right.
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
        x.sub_(m)  # BUG: writes into the caller's input
        e = x.exp()
        return e / e.sum(dim=self.dim, keepdim=True)


def get_inputs():
    return [torch.randn(16, 1024)]


def get_init_inputs():
    return [-1]
