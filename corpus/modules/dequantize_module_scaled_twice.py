# Planted bug (mapped to the dequantize schema, issue 20): the control (dequantize_module.py) with
# the scale applied to each term in float32, x * scale - zero_point * scale: two products and a
# difference, each rounded to float32. Off by ulps where the two terms nearly cancel (x next to the
# zero point), exact at zero point 0; allclose sees nothing.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, scale, zero_point):
        super().__init__()
        self.scale = scale
        self.zero_point = zero_point

    def forward(self, x):
        return torch.dequantize(torch._make_per_tensor_quantized_tensor(x, self.scale, self.zero_point))


class ModelNew(nn.Module):
    def __init__(self, scale, zero_point):
        super().__init__()
        self.scale = float(torch.tensor(scale, dtype=torch.float32))  # the float32 scale, as a qint8 tensor holds it
        self.zero_point = int(zero_point)

    def forward(self, x):
        if x.dtype != torch.int8:
            raise ValueError("dequantize: x must be int8")
        s = torch.tensor(self.scale, dtype=torch.float32)
        return x.to(torch.float32) * s - torch.tensor(float(self.zero_point), dtype=torch.float32) * s  # the bug


def get_inputs():
    return [torch.randint(-128, 128, (64, 256), dtype=torch.int8)]


def get_init_inputs():
    return [0.10000000149011612, 5]
