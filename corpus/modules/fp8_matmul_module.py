# Correct control (mapped to the fp8_matmul schema): a KernelBench-style e4m3 GEMM in plain torch,
# without a library matmul (the schema forbids aten::mm, aten::_scaled_mm and their kin). Each e4m3
# value widens exactly to float32; the products are summed in float64, 16 columns of K at a time
# (memory M*16*N), rounded to float32 once, then scaled per tensor (a) and per column (b), as
# (a.float() @ b.float()) * a_scale * b_scale. Needs a PyTorch with float8_e4m3fn (2.1 and later).
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
        acc = torch.zeros(m, b.shape[1], dtype=torch.float64)
        ad, bd = a.to(torch.float64), b.to(torch.float64)
        for k0 in range(0, k, 16):
            acc += (ad[:, k0:k0 + 16, None] * bd[None, k0:k0 + 16, :]).sum(1)
        return acc.to(torch.float32) * a_scale * b_scale


def get_inputs():
    a = torch.rand(64, 256).to(torch.float8_e4m3fn)
    b = torch.rand(256, 64).to(torch.float8_e4m3fn)
    return [a, b, torch.full((1,), 0.5), torch.full((64,), 0.25)]


def get_init_inputs():
    return []
