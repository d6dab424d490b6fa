# Correct control (mapped to the group_by_sum schema, issue 20): a KernelBench-style group-by sum in
# plain torch without a library scatter (the schema forbids index_add, scatter_add, scatter_reduce,
# index_put, bincount, segment_reduce, embedding_bag). One pass a group: the group's values picked
# by a mask, in input order, summed by a float64 running sum whose last element is the group's sum,
# rounded once; an empty group is zero and a NaN stays in its own group. num_groups comes at
# construction (the manifest fixes G to it); keys outside [0, num_groups) are refused.
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


class ModelNew(nn.Module):
    def __init__(self, num_groups):
        super().__init__()
        self.num_groups = num_groups

    def forward(self, keys, values):
        check(keys, values, self.num_groups)
        out = torch.zeros(self.num_groups, dtype=values.dtype, device=values.device)
        for g in range(self.num_groups):
            picked = values.masked_select(keys == g)
            if picked.numel():
                out[g] = picked.to(torch.float64).cumsum(0)[-1].to(values.dtype)
        return out


def get_inputs():
    return [torch.randint(0, 64, (4096,)), torch.randn(4096)]


def get_init_inputs():
    return [64]
