# Honest narrow contract, KernelBench style (level-1 19_ReLU, get_inputs() x [16, 1024]): the
# module handles only whole groups of 4 along the last dim, as a float4-vectorised CUDA kernel with
# no tail loop does, and refuses any size whose last dim is not a multiple of 4. Its problem promises
# only get_inputs()' shape ("shapes": "get_inputs"), where it is exact: it passes every gate.
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


class ModelNew(nn.Module):
    def forward(self, x):
        if x.shape[-1] % 4 != 0:
            raise ValueError("ModelNew handles a last dim that is a multiple of 4 only")
        y = torch.where(x < 0, torch.zeros_like(x), x)
        return y


def get_inputs():
    return [torch.randn(16, 1024)]


def get_init_inputs():
    return []
