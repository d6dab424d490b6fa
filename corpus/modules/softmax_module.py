# KernelBench-style module: softmax over the last dim, computed by hand (max, exp, sum, divide).
# gauntlet maps it to the "softmax" op schema (softmax_module.json); docs/modules.md.
import torch
import torch.nn as nn


class Model(nn.Module):
    """The reference: the library's softmax."""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.softmax(x, dim=self.dim)


class ModelNew(nn.Module):
    """The candidate: a numerically stable softmax without torch.softmax."""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        m = x.amax(dim=self.dim, keepdim=True)
        e = (x - m).exp()
        return e / e.sum(dim=self.dim, keepdim=True)


def get_inputs():
    return [torch.randn(16, 1024)]


def get_init_inputs():
    return [-1]
