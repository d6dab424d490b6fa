# Planted bug at KernelBench's own size (a row sum over [16, 16384]): the 16 partial sums of each
# row are added in an order drawn afresh on every call (from os.urandom), as an atomicAdd split-K
# reduction's order changes from run to run. Every result is within tolerance; repeated calls, and
# calls in different processes, differ in their low bits (all 16 rows bitwise equal by chance
# under two different orders is far below one in a million).
import os
import random

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.sum(x, dim=1)


class ModelNew(nn.Module):
    def forward(self, x):
        chunks = x.reshape(x.shape[0] * 16, -1)
        parts = (chunks @ torch.ones(chunks.shape[1], 1, dtype=x.dtype)).reshape(x.shape[0], 16)
        order = list(range(16))
        random.Random(os.urandom(8)).shuffle(order)  # BUG: the combining order is the call's, not the data's
        total = parts[:, order[0]].clone()
        for k in order[1:]:
            total = total + parts[:, k]
        return total


def get_inputs():
    return [torch.randn(16, 16384)]


def get_init_inputs():
    return []
