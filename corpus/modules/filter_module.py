# Correct control (mapped to the filter schema, issue 20): a KernelBench-style stream compaction in
# plain torch, without boolean indexing (the schema forbids aten::index, masked_select and nonzero):
# each kept element's slot is the running count of kept elements before it (cumsum of the mask),
# every dropped element goes to one spare slot past the end, one scatter places them all, and the
# spare slot is cut off. Order is preserved; NaN compares false, so it is dropped, as x[x > t] does.
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
        keep = x > self.threshold
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
