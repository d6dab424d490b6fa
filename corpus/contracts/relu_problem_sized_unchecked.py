# The twin of relu_problem_sized_checked without the refusal: whole groups of 4 along the last dim
# only, the tail left at 0, as a float4-vectorised CUDA kernel with no tail loop leaves it. Exact at
# get_inputs()' shape x [16, 1024] (its problem's contract), wrong past it: unsafe, never fail.
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.where(x < 0, torch.zeros_like(x), x)
        whole = (x.shape[-1] // 4) * 4
        y[..., whole:] = 0
        return y


def get_inputs():
    return [torch.randn(16, 1024)]


def get_init_inputs():
    return []
