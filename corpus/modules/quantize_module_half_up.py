# Planted bug (mapped to the quantize_per_tensor schema): the quantizer of quantize_module.py with
# the rounding written as floor(v + 0.5), half UP: an exact tie k + 0.5 goes to k + 1 where the
# contract (torch's qint8) rounds it to the even neighbour, so half the ties of every sign come out
# one level off. Random data never lands on a tie (a randn check passes); values on the
# quantizer's rounding boundaries do.
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, scale, zero_point):
        super().__init__()
        self.scale = scale
        self.zero_point = zero_point

    def forward(self, x):
        return torch.quantize_per_tensor(x, self.scale, self.zero_point, torch.qint8).int_repr()


class ModelNew(nn.Module):
    def __init__(self, scale, zero_point):
        super().__init__()
        self.scale = scale
        self.zero_point = zero_point

    def forward(self, x):
        v = torch.clamp(x / self.scale, -1024.0, 1024.0)
        r = torch.floor(v + 0.5)  # BUG: half up, not half to even
        return torch.clamp(r + self.zero_point, -128, 127).to(torch.int8)


def get_inputs():
    return [torch.randn(64, 256)]


def get_init_inputs():
    return [0.10000000149011612, 5]
