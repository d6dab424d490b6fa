# Correct control (mapped to the sort schema, issue 20): a KernelBench-style stable sort in plain
# torch without a library sort (the schema forbids aten::sort, argsort, msort, topk, kthvalue): an
# LSD radix sort, one bit a pass. Each float key's bits become an unsigned integer that orders as
# the float does (negative: every bit flipped; positive: the sign bit set), after two
# canonicalizations torch.sort's comparisons imply: -0.0 becomes +0.0 (equal keys, so their input
# order stands) and every NaN, whatever its sign and payload, the largest integer (NaN last, in
# input order). Each pass moves
# the keys whose bit is 0 before those whose bit is 1, each group in its current order (cumsum
# ranks, one scatter), so the sort is stable; the original keys and values are gathered last.
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, keys, values):
        sorted_keys, order = torch.sort(keys, stable=True)
        return sorted_keys, values[order]


def orderable_bits(keys):
    bits_of = {torch.float32: (torch.int32, 32), torch.float16: (torch.int16, 16), torch.bfloat16: (torch.int16, 16)}
    int_dtype, width = bits_of[keys.dtype]
    k = torch.where(keys == 0, torch.zeros_like(keys), keys)
    mask = (1 << width) - 1
    sign = 1 << (width - 1)
    u = k.view(int_dtype).to(torch.int64) & mask
    ordered = torch.where((u & sign) != 0, (~u) & mask, u | sign)
    return torch.where(torch.isnan(keys), torch.full_like(ordered, mask), ordered), width


class ModelNew(nn.Module):
    def forward(self, keys, values):
        keys = keys.contiguous()
        bits, width = orderable_bits(keys)
        order = torch.arange(keys.numel(), dtype=torch.int64, device=keys.device)
        for b in range(width):
            one = (bits >> b) & 1
            zero = 1 - one
            zeros = int(zero.sum())
            dest = torch.where(one == 1, zeros + torch.cumsum(one, 0) - 1, torch.cumsum(zero, 0) - 1)
            bits = torch.empty_like(bits).scatter_(0, dest, bits)
            order = torch.empty_like(order).scatter_(0, dest, order)
        return keys.gather(0, order), values.contiguous().gather(0, order)


def get_inputs():
    return [torch.randn(4096), torch.randperm(4096)]


def get_init_inputs():
    return []
