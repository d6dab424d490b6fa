# Correct unmapped module (KernelBench level-1 16_Matmul_with_transposed_A, a near miss of matmul:
# the first input is given as [K, M]): checked against its own Model in float64. ModelNew forms
# the K products of each output element and sums them (aten::mul, aten::sum), not Model's aten::mm.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A.T, B)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return (A.unsqueeze(2) * B.unsqueeze(1)).sum(dim=0)


def get_inputs():
    return [torch.randn(96, 48), torch.randn(96, 40)]


def get_init_inputs():
    return []
