# Planted bug (CUDA, Triton): the ReLU kernel writes its result over the input (to save an
# allocation) and returns a copy: the values are right, the caller's tensor is overwritten.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.where(x > 0, x, tl.where(x != x, x, 0.0))
    tl.store(x_ptr + offs, y, mask=mask)  # BUG: writes the input


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


class ModelNew(nn.Module):
    def forward(self, x):
        xc = x if x.is_contiguous() else x.contiguous()
        n = xc.numel()
        if n:
            relu_kernel[(triton.cdiv(n, 1024),)](xc, n, BLOCK=1024)
        return xc.clone()


def get_inputs():
    return [torch.randn(16, 16384).cuda()]


def get_init_inputs():
    return []
