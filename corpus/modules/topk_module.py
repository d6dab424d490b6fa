# Correct control (mapped to the topk schema, issue 20): a KernelBench-style top-k in plain torch
# without a library sort or topk (the schema forbids aten::topk, sort, argsort, kthvalue, msort).
# Each float's bits become an integer that orders as the float does (negative: every bit flipped;
# positive: the sign bit set; -0.0 as +0.0, the two being equal; every NaN the largest, as
# torch.topk ranks NaN above everything). A radix select finds each row's k-th largest key bit by
# bit, the keys above it and the first ties fill the k places, and an LSD radix sort (one bit a
# pass) orders those k largest first. The values are gathered from x by the chosen indices. (A
# radix sort of whole rows took 0.43 s a call at the timing gate's [512, 1000].)
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.k = k

    def forward(self, x):
        return torch.topk(x, self.k, dim=-1)


def orderable_bits(x):
    bits_of = {torch.float32: (torch.int32, 32), torch.float16: (torch.int16, 16), torch.bfloat16: (torch.int16, 16)}
    int_dtype, width = bits_of[x.dtype]
    mask = (1 << width) - 1
    sign = 1 << (width - 1)
    u = torch.where(x == 0, torch.zeros_like(x), x).view(int_dtype).to(torch.int64) & mask
    ordered = torch.where((u & sign) != 0, (~u) & mask, u | sign)
    return torch.where(torch.isnan(x), torch.full_like(ordered, mask), ordered), width


def radix_sort_descending(keys, payload, width):
    """Stable LSD radix sort of each row, largest key first, one bit a pass; payload moves alike."""
    rank = ((1 << width) - 1) - keys
    for b in range(width):
        one = (rank >> b) & 1
        zero = 1 - one
        zeros = zero.sum(dim=1, keepdim=True)
        dest = torch.where(one == 1, zeros + torch.cumsum(one, 1) - 1, torch.cumsum(zero, 1) - 1)
        rank = torch.empty_like(rank).scatter_(1, dest, rank)
        payload = torch.empty_like(payload).scatter_(1, dest, payload)
    return payload


class ModelNew(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.k = k

    def forward(self, x):
        x = x.contiguous()
        k = self.k
        ordered, width = orderable_bits(x)
        # The k-th largest key of each row, bit by bit from the top: the largest t with at least k
        # keys >= t (a radix select: one count a bit, no sort of the whole row).
        t = torch.zeros((x.shape[0], 1), dtype=torch.int64, device=x.device)
        for b in range(width - 1, -1, -1):
            trial = t | (1 << b)
            enough = (ordered >= trial).sum(dim=1, keepdim=True) >= k
            t = torch.where(enough, trial, t)
        above = ordered > t
        tied = ordered == t
        room = k - above.sum(dim=1, keepdim=True)  # the ties that fill the top k, first in index order
        chosen = above | (tied & (torch.cumsum(tied.to(torch.int64), 1) <= room))
        slot = torch.where(chosen, torch.cumsum(chosen.to(torch.int64), 1) - 1, torch.full_like(ordered, k))
        index = torch.arange(x.shape[1], dtype=torch.int64, device=x.device).expand(x.shape).contiguous()
        picked = torch.empty((x.shape[0], k + 1), dtype=torch.int64, device=x.device).scatter_(1, slot, index)[:, :k]
        indices = radix_sort_descending(ordered.gather(1, picked), picked, width).contiguous()
        return x.gather(1, indices), indices


def get_inputs():
    return [torch.randn(16, 1024)]


def get_init_inputs():
    return [5]
