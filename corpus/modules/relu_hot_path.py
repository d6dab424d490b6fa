# PLANTED BUG (timing): a KernelBench-style ReLU module that switches to a "hot path" after its
# sixteenth call on a large input (the specialization an autotuner or a warmed-up cache would do),
# and the hot path zero-fills the last partial block of 1024 elements instead of computing it.
# Every call before the switch is right, so five KernelBench-style trials and every correctness
# gate (few large calls per gate process) see a correct module; a benchmark loop times the wrong
# hot path. The Python module twin of corpus/bugs/timing/relu_tail_dropped_when_hot.cpp: gauntlet's
# timing gate re-checks every timed output against the verified one (docs/modules.md).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.large_calls = 0

    def forward(self, x):
        out = torch.where(x < 0, torch.zeros_like(x), x).contiguous()
        n = out.numel()
        if n >= (1 << 18):
            self.large_calls += 1
            if self.large_calls > 16:
                full = n // 1024 * 1024
                out.view(-1)[full:] = 0
        return out


def get_inputs():
    return [torch.randn(16, 16384)]


def get_init_inputs():
    return []
