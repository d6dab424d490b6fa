# Correct CUDA module (Triton): row softmax over the last dim, one program per row, the row max
# subtracted before exp, float32 arithmetic. Verified as the softmax schema (dim=-1).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, y_ptr, row_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * row_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    e = tl.where(mask, e, 0.0)
    y = e / tl.sum(e, axis=0)
    tl.store(y_ptr + row * row_stride + cols, y, mask=mask)


def softmax(x):
    shape = x.shape
    x2 = x.contiguous().reshape(-1, shape[-1]) if x.dim() else x.reshape(1, 1)
    y = torch.empty_like(x2)
    rows, cols = x2.shape
    if cols > 16384:  # one program holds a whole row: larger rows are outside this kernel's contract
        raise ValueError("softmax: rows of %d elements exceed the 16384 this kernel supports" % cols)
    if rows and cols:
        softmax_kernel[(rows,)](x2, y, x2.stride(0), cols, BLOCK=triton.next_power_of_2(cols))
    return y.reshape(shape)


class Model(nn.Module):
    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.softmax(x, dim=self.dim)


class ModelNew(nn.Module):
    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return softmax(x)


def get_inputs():
    return [torch.randn(16, 4096).cuda()]


def get_init_inputs():
    return [-1]
