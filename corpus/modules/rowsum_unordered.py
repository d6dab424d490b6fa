# Planted bug at KernelBench's own size (a row sum over [16, 16384]): the 16 partial sums of each
# row are added starting from a chunk that changes from call to call (the clock's low bits), as an
# atomicAdd split-K reduction's order changes from run to run. Every result is within tolerance;
# repeated calls differ in their low bits.
import time

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.sum(x, dim=1)


class ModelNew(nn.Module):
    def forward(self, x):
        chunks = x.reshape(x.shape[0] * 16, -1)
        parts = (chunks @ torch.ones(chunks.shape[1], 1, dtype=x.dtype)).reshape(x.shape[0], 16)
        start = time.perf_counter_ns() % 16  # BUG: the combining order is the call's, not the data's
        order = [(start + k) % 16 for k in range(16)]
        total = parts[:, order[0]].clone()
        for k in order[1:]:
            total = total + parts[:, k]
        return total


def get_inputs():
    return [torch.randn(16, 16384)]


def get_init_inputs():
    return []
