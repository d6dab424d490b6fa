# A module whose output is never written: it returns torch.empty_like(x), so what it returns is
# whatever the allocator handed out. tests/e2e/modules_test.cpp runs the memory gate on it: its
# two children poison new memory differently (0xA5, 0xFE on the CPU), so the outputs differ, byte for byte
# the poison patterns (python/gauntlet_worker/poisons.py, poison_heap).
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.empty_like(x)  # BUG: never written


def get_inputs():
    return [torch.randn(16, 64)]


def get_init_inputs():
    return []
