# Correct control (mapped to the unique schema, issue 20): a KernelBench-style sorted unique with
# counts in plain torch without a library sort or unique (the schema forbids sort, argsort, unique,
# bincount, histc). An LSD radix sort of the int64 keys, one bit a pass, on keys whose sign bit is
# flipped so that they order as unsigned integers do (INT64_MIN first, INT64_MAX last); each pass
# moves the keys whose bit is 0 before those whose bit is 1, in their current order (cumsum ranks,
# one scatter). Then the runs: a key differing from its left neighbour starts one, its count is the
# distance to the next start.
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.unique(x, sorted=True, return_counts=True)


def radix_sorted(x, flip_sign=True):
    bits = x.contiguous().view(-1)
    if flip_sign:
        bits = bits ^ torch.tensor(-(1 << 63), dtype=torch.int64)  # signed order as unsigned order
    for b in range(64):
        one = (bits >> b) & 1
        zero = 1 - one
        zeros = int(zero.sum())
        dest = torch.where(one == 1, zeros + torch.cumsum(one, 0) - 1, torch.cumsum(zero, 0) - 1)
        bits = torch.empty_like(bits).scatter_(0, dest, bits)
    return bits ^ torch.tensor(-(1 << 63), dtype=torch.int64) if flip_sign else bits


def runs(keys):
    n = keys.numel()
    if n == 0:
        return keys, torch.zeros(0, dtype=torch.int64, device=keys.device)
    starts = torch.ones(n, dtype=torch.bool, device=keys.device)
    starts[1:] = keys[1:] != keys[:-1]
    first = torch.nonzero(starts).view(-1)
    ends = torch.cat([first[1:], torch.tensor([n], dtype=torch.int64, device=keys.device)])
    return keys[first], ends - first


class ModelNew(nn.Module):
    def forward(self, x):
        if x.dtype != torch.int64 or x.dim() != 1:
            raise ValueError("unique: x must be a 1-D int64 tensor")
        return runs(radix_sorted(x))


def get_inputs():
    return [torch.randint(-1000, 1000, (4096,))]


def get_init_inputs():
    return []
