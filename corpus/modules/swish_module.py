# Correct unmapped module (no op schema: Swish, x * sigmoid(x)): checked against its own Model in
# float64. ModelNew computes x / (1 + exp(-x)), which avoids Model's operators (sigmoid, mul).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * torch.sigmoid(x)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x / (1 + torch.exp(-x))


def get_inputs():
    return [torch.randn(16, 4096)]


def get_init_inputs():
    return []
