# Correct unmapped module at KernelBench's own size (level-1 23_Softmax: batch 16, dim 16384): its
# fixed get_inputs() shape is above the per-case budget of the layouts, determinism and
# statelessness gates, which run fewer cases at that shape instead of none (include/gauntlet/case_cost.h).
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=1)


class ModelNew(nn.Module):
    def forward(self, x):
        m = x.amax(dim=1, keepdim=True)
        e = (x - m).exp()
        return e / e.sum(dim=1, keepdim=True)


def get_inputs():
    return [torch.randn(16, 16384)]


def get_init_inputs():
    return []
