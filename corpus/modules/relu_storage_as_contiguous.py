# Planted bug at KernelBench's own size (level-1 19_ReLU: batch 16, dim 16384): the module reads
# its input's storage as if the tensor were contiguous, as a CUDA kernel indexing data_ptr() does.
# KernelBench's own inputs are contiguous, so its check passes; a transposed or strided input gives
# wrong values silently.
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


class ModelNew(nn.Module):
    def forward(self, x):
        strides, step = [], 1
        for size in reversed(x.shape):
            strides.insert(0, step)
            step *= size
        if 0 not in x.stride():  # (an expanded input's storage is too small to read this way)
            x = x.as_strided(x.shape, strides, x.storage_offset())  # BUG: the strides are ignored
        return x.clamp_min(0.0)


def get_inputs():
    return [torch.randn(16, 16384)]


def get_init_inputs():
    return []
