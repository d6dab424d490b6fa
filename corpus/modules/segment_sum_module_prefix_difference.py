# Planted bug (mapped to the segment_sum schema, issue 20): the segmented sum as a difference of
# one float64 prefix sum over all rows, prefix[offsets[s+1]] - prefix[offsets[s]], a common
# vectorized trick. On finite data it is as accurate as the control, so allclose accepts it; but a
# NaN or infinity in one segment poisons the prefix of every later row, and every later segment
# comes out NaN (inf - inf), where the contract keeps a special value inside its own segment.
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
        prefix = torch.cat([x.new_zeros((1, x.shape[1]), dtype=torch.float64), x.to(torch.float64).cumsum(0)])
        o = offsets.to(torch.int64)
        return (prefix[o[1:]] - prefix[o[:-1]]).to(x.dtype)  # the bug: a special value leaks forward


def get_inputs():
    return [torch.randn(4096, 64), torch.tensor([0, 1, 1, 700, 2048, 4000, 4096])]


def get_init_inputs():
    return []
