# Correct control (mapped to the scatter_add schema, issue 20): a KernelBench-style scatter-add in
# plain torch without a library scatter (the schema forbids index_add, scatter_add, scatter_reduce,
# index_put, bincount, segment_reduce, embedding_bag). One pass a bucket: the bucket's terms picked
# by a mask, summed by a float64 running sum whose last element is the bucket's sum, rounded once;
# a bucket no index names is zero and a NaN stays in its own bucket. size comes at construction
# (the manifest fixes V to it); indices outside [0, size) are refused.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.size = size

    def forward(self, x, index):
        return torch.zeros(self.size, dtype=x.dtype).index_add_(0, index, x)


def check(x, index, size):
    if index.dtype != torch.int64 or index.dim() != 1 or x.dim() != 1 or index.numel() != x.numel():
        raise ValueError("scatter_add: x and index must be 1-D of one length, index int64")
    if index.numel() and (int(index.min()) < 0 or int(index.max()) >= size):
        raise ValueError("scatter_add: an index outside [0, size)")


class ModelNew(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.size = size

    def forward(self, x, index):
        check(x, index, self.size)
        out = torch.zeros(self.size, dtype=x.dtype, device=x.device)
        for v in range(self.size):
            picked = x.masked_select(index == v)
            if picked.numel():
                out[v] = picked.to(torch.float64).cumsum(0)[-1].to(x.dtype)
        return out


def get_inputs():
    return [torch.randn(4096), torch.randint(0, 64, (4096,))]


def get_init_inputs():
    return [64]
