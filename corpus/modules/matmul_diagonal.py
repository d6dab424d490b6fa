# Correct unmapped module (KernelBench level-1 12_Matmul_with_diagonal_matrices_, scaled down):
# Model multiplies diag(A) by B densely; ModelNew scales each row of B by A[i]. On special inputs
# the dense reference spreads a NaN of B down its whole column through the diagonal's zeros
# (0 x NaN), where ModelNew leaves the other rows finite: the special-values gate judges those
# elements against the reference with strong zeros (docs/tolerances.md), so this passes.
import torch
import torch.nn as nn

N, M = 24, 20


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.diag(A) @ B


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return A.unsqueeze(1) * B


def get_inputs():
    return [torch.randn(N), torch.randn(N, M)]


def get_init_inputs():
    return []
