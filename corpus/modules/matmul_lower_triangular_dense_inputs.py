# Planted bug (unmapped module): the triangular kernel of matmul_lower_triangular.py under a
# problem whose get_inputs() is dense. Nothing promises triangular inputs here, so summing only
# k from j to i drops real products: wrong on the problem's own inputs (in-contract), which
# shows that the structure comes from get_inputs(), never from what the kernel assumes.
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
    return [torch.randn(N, N), torch.randn(N, N)]


def get_init_inputs():
    return []
