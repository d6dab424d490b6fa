# Planted bug (mapped to the scatter_add schema, issue 20): the control (scatter_add_module.py) with
# each bucket summed as a pairwise tree in float16, as a kernel using half-precision atomics or
# half accumulators does: every addition rounds to 11 bits, an error of about log2(k) * 2^-11 of the
# bucket's magnitude, far past the float32 bound, yet within allclose's 1e-2.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.size = size

    def forward(self, x, index):
        return torch.zeros(self.size, dtype=x.dtype).index_add_(0, index, x)


def check(x, index, size):
    if index.dtype != torch.int64 or index.dim() != 1 or x.dim() != 1 or index.numel() != x.numel():
        raise ValueError("scatter_add: x and index must be 1-D of one length, index int64")
    if index.numel() and (int(index.min()) < 0 or int(index.max()) >= size):
        raise ValueError("scatter_add: an index outside [0, size)")


def half_tree_sum(terms):
    t = terms.to(torch.float16)  # the bug: float16 partial sums
    while t.numel() > 1:
        if t.numel() % 2:
            t = torch.cat([t, t.new_zeros(1)])
        t = t[0::2] + t[1::2]
    return t[0]


class ModelNew(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.size = size

    def forward(self, x, index):
        check(x, index, self.size)
        out = torch.zeros(self.size, dtype=x.dtype, device=x.device)
        for v in range(self.size):
            picked = x.masked_select(index == v)
            if picked.numel():
                out[v] = half_tree_sum(picked).to(x.dtype)
        return out


def get_inputs():
    return [torch.randn(4096), torch.randint(0, 64, (4096,))]


def get_init_inputs():
    return [64]
