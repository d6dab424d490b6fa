# Correct control (mapped to the hash_join schema, issue 20): a KernelBench-style equi-join in plain
# torch without the ops that would do it for it (the schema forbids eq, nonzero, where, isin,
# searchsorted, sort, argsort, unique and index). A sort-merge join: the right keys radix-sorted
# with their positions (stable, one bit a pass, sign bit flipped so signed keys order), then each
# left key's run of equal right keys found by two vectorized binary searches (first >= key, first
# > key), and the runs expanded into (i, j) pairs: row-major over i, and within a run j ascending,
# because the sort is stable. The pairs come out sorted by (i, j) as the contract says.
import torch
import torch.nn as nn

SIGN = -(1 << 63)


class Model(nn.Module):
    def forward(self, left, right):
        return torch.nonzero(left[:, None] == right[None, :])


def stable_radix_sort(keys):
    bits = keys ^ torch.tensor(SIGN, dtype=torch.int64)
    order = torch.arange(keys.numel(), dtype=torch.int64, device=keys.device)
    for b in range(64):
        one = (bits >> b) & 1
        zero = 1 - one
        zeros = int(zero.sum())
        dest = one * (zeros + torch.cumsum(one, 0) - 1) + zero * (torch.cumsum(zero, 0) - 1)
        bits = torch.empty_like(bits).scatter_(0, dest, bits)
        order = torch.empty_like(order).scatter_(0, dest, order)
    return bits ^ torch.tensor(SIGN, dtype=torch.int64), order


def first_position(sorted_keys, keys, strictly_greater):
    # The first position p in [0, M] with sorted_keys[p] >= key (> key when strictly_greater).
    lo = torch.zeros_like(keys)
    hi = torch.full_like(keys, sorted_keys.numel())
    while bool((lo < hi).any()):
        active = (lo < hi).to(torch.int64)
        mid = (lo + hi) // 2
        probe = sorted_keys.gather(0, mid.clamp(max=max(sorted_keys.numel() - 1, 0)))
        below = (probe <= keys) if strictly_greater else (probe < keys)
        go_right = below.to(torch.int64) * active
        lo = lo + go_right * (mid + 1 - lo)
        hi = hi - (1 - go_right) * active * (hi - mid)
    return lo


def matches(left, right):
    if left.numel() == 0 or right.numel() == 0:
        return torch.zeros((0, 2), dtype=torch.int64, device=left.device)
    sorted_keys, order = stable_radix_sort(right)
    start = first_position(sorted_keys, left, False)
    end = first_position(sorted_keys, left, True)
    return start, end - start, order


class ModelNew(nn.Module):
    def forward(self, left, right):
        if left.dtype != torch.int64 or right.dtype != torch.int64 or left.dim() != 1 or right.dim() != 1:
            raise ValueError("hash_join: left and right must be 1-D int64")
        found = matches(left.contiguous(), right.contiguous())
        if isinstance(found, torch.Tensor):
            return found
        start, count, order = found
        i = torch.repeat_interleave(torch.arange(left.numel(), dtype=torch.int64, device=left.device), count)
        first_of_row = torch.cumsum(count, 0) - count
        within = torch.arange(i.numel(), dtype=torch.int64, device=left.device) - first_of_row.gather(0, i)
        j = order.gather(0, start.gather(0, i) + within)
        return torch.stack([i, j], dim=1)


def get_inputs():
    return [torch.randint(0, 100, (1000,)), torch.randint(0, 100, (800,))]


def get_init_inputs():
    return []
