# Correct control (mapped to the segment_sum schema, issue 20): a KernelBench-style segmented sum in
# plain torch without a library reduction (the schema forbids aten::sum, segment_reduce, index_add,
# scatter_add, embedding_bag...). Each segment's rows are summed on their own: a float64 running sum
# (cumsum) down the segment, whose last row is the segment's sum, rounded once to x's dtype. A NaN
# or infinity stays inside its own segment, and an empty segment is zero. Offsets that do not run
# non-decreasing from 0 to N are refused.
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, offsets):
        bounds = offsets.tolist()
        rows = [x[a:b].sum(0) if b > a else torch.zeros_like(x[0]) for a, b in zip(bounds[:-1], bounds[1:])]
        return torch.stack(rows) if rows else x.new_zeros((0, x.shape[1]))


class ModelNew(nn.Module):
    def forward(self, x, offsets):
        if x.dim() != 2 or offsets.dim() != 1 or offsets.numel() < 1:
            raise ValueError("segment_sum: x must be [N, D] and offsets [S+1]")
        bounds = offsets.tolist()
        if bounds[0] != 0 or bounds[-1] != x.shape[0] or any(b < a for a, b in zip(bounds[:-1], bounds[1:])):
            raise ValueError("segment_sum: offsets must run non-decreasing from 0 to N")
        out = torch.zeros((len(bounds) - 1, x.shape[1]), dtype=x.dtype, device=x.device)
        for s, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])):
            if b > a:
                out[s] = x[a:b].to(torch.float64).cumsum(0)[-1].to(x.dtype)
        return out


def get_inputs():
    return [torch.randn(4096, 64), torch.tensor([0, 1, 1, 700, 2048, 4000, 4096])]


def get_init_inputs():
    return []
