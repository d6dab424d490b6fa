# A bug inside its problem's contract, KernelBench style (level-1 19_ReLU at get_inputs()' own shape
# x [16, 1024]): ReLU as fmax(x, 0), which returns 0 for NaN where torch.relu propagates it (5 of 5
# public leaderboard ReLU solutions write fmaxf(0, x)). Values are free inside the contract, so the
# special-values gate fails it in-contract and names the pattern (nan-dropped).
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.fmax(x, torch.zeros_like(x))


def get_inputs():
    return [torch.randn(16, 1024)]


def get_init_inputs():
    return []
