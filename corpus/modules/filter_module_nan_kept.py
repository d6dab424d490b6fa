# PLANTED BUG (special-values; mapped to the filter schema, issue 20): filter_module.py's stream
# compaction with the predicate written as the complement of x <= threshold. For every number the
# two agree, but NaN compares false both ways, so ~(x <= t) keeps every NaN that x > t drops: the
# output is longer than torch's and holds NaNs. Random inputs (the KernelBench-style check's
# U[0,1)) have no NaN; the special-values gate places them.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, threshold):
        super().__init__()
        self.threshold = threshold

    def forward(self, x):
        return x[x > self.threshold]


class ModelNew(nn.Module):
    def __init__(self, threshold):
        super().__init__()
        self.threshold = threshold

    def forward(self, x):
        keep = ~(x <= self.threshold)
        kept = int(keep.sum())
        slot = torch.cumsum(keep.to(torch.int64), 0) - 1
        slot = torch.where(keep, slot, torch.full_like(slot, kept))
        out = torch.empty(kept + 1, dtype=x.dtype, device=x.device)
        out.scatter_(0, slot, x)
        return out[:kept]


def get_inputs():
    return [torch.randn(4096)]


def get_init_inputs():
    return [0.0]
