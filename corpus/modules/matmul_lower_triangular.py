# Correct unmapped module (KernelBench level-1 15_Matmul_for_lower_triangular_matrices, scaled
# down): get_inputs() builds lower-triangular A and B, so the problem promises them, and ModelNew
# sums only the products a triangular kernel forms (k from j to i). gauntlet reads the structure
# from get_inputs() and keeps every case lower-triangular (docs/modules.md, "Structured inputs").
import torch
import torch.nn as nn

N = 24


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.tril(torch.matmul(A, B))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        n = A.shape[-1]
        i = torch.arange(n).view(n, 1, 1)
        k = torch.arange(n).view(1, n, 1)
        j = torch.arange(n).view(1, 1, n)
        # Products outside j <= k <= i are skipped, not multiplied by zero: the structural zeros
        # are never read (a NaN elsewhere in the column stays where it is).
        inside = (j <= k) & (k <= i)
        terms = A.unsqueeze(2) * B.unsqueeze(0)
        return torch.where(inside, terms, torch.zeros((), dtype=A.dtype)).sum(dim=1)


def get_inputs():
    return [torch.tril(torch.randn(N, N)), torch.tril(torch.randn(N, N))]


def get_init_inputs():
    return []
