# Planted bug (unmapped module, a clamp that returns its input): a HardTanh whose "fast path"
# returns the input tensor itself, unclamped, when its first element already lies in [-1, 1].
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.clamp(x, -1.0, 1.0)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        first = float(x.reshape(-1)[0]) if x.numel() else 0.0
        if -1.0 <= first <= 1.0:
            return x  # BUG: one element in range does not make the tensor in range
        return torch.where(x < -1.0, torch.full_like(x, -1.0), torch.where(x > 1.0, torch.full_like(x, 1.0), x))


def get_inputs():
    return [torch.randn(16, 2048)]


def get_init_inputs():
    return []
