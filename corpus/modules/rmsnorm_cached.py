# Planted bug (unmapped module, a cached result): the RMSNorm of 36_RMSNorm_ caches its output per
# input shape and returns a copy of it for any later input of that shape.
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
        self.cache = {}

    def forward(self, x):
        key = (tuple(x.shape), x.dtype)
        if key in self.cache:  # BUG: a stale result for new values of the same shape
            return self.cache[key].clone()
        ms = (x * x).sum(dim=1, keepdim=True) / self.num_features
        y = x * torch.rsqrt(ms + self.eps)
        self.cache[key] = y.clone()
        return y


def get_inputs():
    return [torch.randn(4, 32, 16, 16)]


def get_init_inputs():
    return [32]
