# Planted bug (mapped to the fp8_matmul schema): the GEMM of fp8_matmul_module.py with a float16
# running sum. Every e4m3 product is exact in float16, but the sum keeps 11 bits (rounded once every
# 16 products here) and overflows to inf past 65504, where the contract's float32 sum does not.
# Within 1e-2 of the reference on a check's small uniform inputs (get_inputs below); wrong on long
# reductions, large values and cancellation.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b, a_scale, b_scale):
        return (a.double() @ b.double()).float() * a_scale * b_scale


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b, a_scale, b_scale):
        if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
            raise ValueError("a must be [M, K] and b [K, N]")
        if a.dtype != torch.float8_e4m3fn or b.dtype != torch.float8_e4m3fn:
            raise ValueError("a and b must be float8_e4m3fn")
        if a_scale.numel() != 1 or b_scale.dim() != 1 or b_scale.shape[0] != b.shape[1]:
            raise ValueError("a_scale must hold one value and b_scale one per column of b")
        m, k = a.shape
        acc = torch.zeros(m, b.shape[1], dtype=torch.float16)  # BUG: the contract sums in float32 or wider
        ah, bh = a.to(torch.float16), b.to(torch.float16)
        for k0 in range(0, k, 16):
            acc += (ah[:, k0:k0 + 16, None] * bh[None, k0:k0 + 16, :]).sum(1)
        return acc.to(torch.float32) * a_scale * b_scale


def get_inputs():
    a = torch.rand(64, 256).to(torch.float8_e4m3fn)
    b = torch.rand(256, 64).to(torch.float8_e4m3fn)
    return [a, b, torch.full((1,), 0.5), torch.full((64,), 0.25)]


def get_init_inputs():
    return []
