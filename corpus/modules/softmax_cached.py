# Planted bug: the module caches its result by input shape and returns a copy of the cached
# output when it sees the same shape again, whatever the values.
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
        self.cache = {}

    def forward(self, x):
        key = (tuple(x.shape), x.dtype)
        if key in self.cache:  # BUG: stale result for new values of the same shape
            return self.cache[key].clone()
        m = x.amax(dim=self.dim, keepdim=True)
        e = (x - m).exp()
        y = e / e.sum(dim=self.dim, keepdim=True)
        self.cache[key] = y.clone()
        return y


def get_inputs():
    return [torch.randn(16, 1024)]


def get_init_inputs():
    return [-1]
