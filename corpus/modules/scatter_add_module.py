# Correct control (mapped to the scatter_add schema, issue 20): a KernelBench-style scatter-add in
# plain torch without a library scatter (the schema forbids index_add, scatter_add, scatter_reduce,
# index_put, bincount, segment_reduce, embedding_bag). The terms sorted by index (a stable radix
# sort over the bits size needs), each bucket's run found by a binary search, and each run summed
# by a float64 running sum whose last element is the bucket's sum, rounded once: a bucket no index
# names is zero and a NaN stays in its own bucket. size comes at construction (the manifest fixes V
# to it); indices outside [0, size) are refused.
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


def sort_by_key(keys, values, groups):
    # A stable LSD radix sort of keys in [0, groups) with their values: only the bits groups needs.
    keys, values = keys.contiguous(), values.contiguous()
    for b in range(max(1, (groups - 1).bit_length())):
        one = (keys >> b) & 1
        zero = 1 - one
        zeros = int(zero.sum())
        dest = one * (zeros + torch.cumsum(one, 0) - 1) + zero * (torch.cumsum(zero, 0) - 1)
        keys = torch.empty_like(keys).scatter_(0, dest, keys)
        values = torch.empty_like(values).scatter_(0, dest, values)
    return keys, values


def first_position(sorted_keys, queries):
    # For each query, the first position p in [0, N] with sorted_keys[p] >= query (binary search).
    lo = torch.zeros_like(queries)
    hi = torch.full_like(queries, sorted_keys.numel())
    while bool((lo < hi).any()):
        active = (lo < hi).to(torch.int64)
        mid = (lo + hi) // 2
        probe = sorted_keys.gather(0, mid.clamp(max=max(sorted_keys.numel() - 1, 0)))
        go_right = (probe < queries).to(torch.int64) * active
        lo = lo + go_right * (mid + 1 - lo)
        hi = hi - (1 - go_right) * active * (hi - mid)
    return lo


class ModelNew(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.size = size

    def forward(self, x, index):
        check(x, index, self.size)
        ordered_keys, ordered = sort_by_key(index, x, self.size)
        start = first_position(ordered_keys, torch.arange(self.size + 1, dtype=torch.int64, device=index.device)).tolist()
        out = torch.zeros(self.size, dtype=x.dtype, device=x.device)
        for g in range(self.size):
            if start[g + 1] > start[g]:
                out[g] = ordered[start[g]:start[g + 1]].to(torch.float64).cumsum(0)[-1].to(x.dtype)
        return out


def get_inputs():
    return [torch.randn(4096), torch.randint(0, 64, (4096,))]


def get_init_inputs():
    return [64]
