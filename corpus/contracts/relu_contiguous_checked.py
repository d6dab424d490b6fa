# Honest narrow contract, KernelBench style (level-1 19_ReLU at its own size, batch 16, dim 16384):
# the module reads its input's storage as if the tensor were contiguous, as a CUDA kernel indexing
# data_ptr() does, and refuses any other layout. A KernelBench module's contract is its problem's
# (contiguous inputs): refusing a transposed or strided view is right, so it passes every gate.
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


class ModelNew(nn.Module):
    def forward(self, x):
        if not x.is_contiguous():
            raise ValueError("ModelNew takes contiguous inputs only")
        strides, step = [], 1
        for size in reversed(x.shape):
            strides.insert(0, step)
            step *= size
        x = x.as_strided(x.shape, strides, x.storage_offset())
        return x.clamp_min(0.0)


def get_inputs():
    return [torch.randn(16, 16384)]


def get_init_inputs():
    return []
