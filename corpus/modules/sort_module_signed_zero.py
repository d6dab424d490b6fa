# PLANTED BUG (mapped to the sort schema, issue 20): sort_module.py's radix sort without its first
# canonicalization: -0.0 keeps its sign bit, so its orderable integer lies just below +0.0's and
# every -0.0 is placed before every +0.0. torch.sort compares them equal, so a stable sort keeps
# them in input order: wherever a +0.0 comes before a -0.0, the keys still look sorted (the zeros
# compare equal) but the values permuted with them differ. Random keys never hold both zeros; the
# sort schema's tied keys draw both from their pool.
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, keys, values):
        sorted_keys, order = torch.sort(keys, stable=True)
        return sorted_keys, values[order]


def orderable_bits(keys):
    bits_of = {torch.float32: (torch.int32, 32), torch.float16: (torch.int16, 16), torch.bfloat16: (torch.int16, 16)}
    int_dtype, width = bits_of[keys.dtype]
    k = keys
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
