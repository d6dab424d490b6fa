# Planted bug (mapped to the int8_matmul schema): the GEMM of int8_matmul_module.py applying b's
# scale per tensor: b_scale[0] for every output column, where the contract scales column n by
# b_scale[n] (per channel). Exact wherever b's scales are all equal, as in a check whose inputs
# fill them with one value (get_inputs below); wrong by the ratio of the scales everywhere else.
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
        if a.dtype != torch.int8 or b.dtype != torch.int8:
            raise ValueError("a and b must be int8")
        if a_scale.numel() != 1 or b_scale.dim() != 1 or b_scale.shape[0] != b.shape[1]:
            raise ValueError("a_scale must hold one value and b_scale one per column of b")
        m, k = a.shape
        acc = torch.zeros(m, b.shape[1], dtype=torch.int64)
        ai, bi = a.to(torch.int64), b.to(torch.int64)
        for k0 in range(0, k, 16):
            acc += (ai[:, k0:k0 + 16, None] * bi[None, k0:k0 + 16, :]).sum(1)
        return acc.to(torch.float32) * a_scale * b_scale[0]  # BUG: per tensor, not per channel


def get_inputs():
    a = torch.randint(-128, 128, (64, 256), dtype=torch.int8)
    b = torch.randint(-128, 128, (256, 64), dtype=torch.int8)
    return [a, b, torch.full((1,), 0.01), torch.full((64,), 0.02)]


def get_init_inputs():
    return []
