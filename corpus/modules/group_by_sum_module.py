# Correct control (mapped to the group_by_sum schema, issue 20): a KernelBench-style group-by sum in
# plain torch without a library scatter (the schema forbids index_add, scatter_add, scatter_reduce,
# index_put, bincount, segment_reduce, embedding_bag). The values sorted by key (a stable radix sort
# over the bits num_groups needs), each group's run found by a binary search, and each run summed
# by a float64 running sum whose last element is the group's sum, rounded once: an empty group is
# zero and a NaN stays in its own group. num_groups comes at construction (the manifest fixes G to
# it); keys outside [0, num_groups) are refused.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, num_groups):
        super().__init__()
        self.num_groups = num_groups

    def forward(self, keys, values):
        return torch.zeros(self.num_groups, dtype=values.dtype).index_add_(0, keys, values)


def check(keys, values, num_groups):
    if keys.dtype != torch.int64 or keys.dim() != 1 or values.dim() != 1 or keys.numel() != values.numel():
        raise ValueError("group_by_sum: keys and values must be 1-D of one length, keys int64")
    if keys.numel() and (int(keys.min()) < 0 or int(keys.max()) >= num_groups):
        raise ValueError("group_by_sum: a key outside [0, num_groups)")


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
    def __init__(self, num_groups):
        super().__init__()
        self.num_groups = num_groups

    def forward(self, keys, values):
        check(keys, values, self.num_groups)
        ordered_keys, ordered = sort_by_key(keys, values, self.num_groups)
        start = first_position(ordered_keys, torch.arange(self.num_groups + 1, dtype=torch.int64, device=keys.device)).tolist()
        out = torch.zeros(self.num_groups, dtype=values.dtype, device=values.device)
        for g in range(self.num_groups):
            if start[g + 1] > start[g]:
                out[g] = ordered[start[g]:start[g + 1]].to(torch.float64).cumsum(0)[-1].to(values.dtype)
        return out


def get_inputs():
    return [torch.randint(0, 64, (4096,)), torch.randn(4096)]


def get_init_inputs():
    return [64]
