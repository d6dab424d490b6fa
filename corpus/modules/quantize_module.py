# Correct control (mapped to the quantize_per_tensor schema): a KernelBench-style int8 quantizer in
# plain torch, without torch.round (the schema forbids aten::round): x / scale in float32, clamped
# far past the int8 range (so +-inf saturate and the magic number stays exact), rounded half to
# even by the float32 magic-number trick (adding and subtracting 1.5 * 2^23 leaves the nearest
# integer, ties to even, for |v| < 2^22), then the zero point and saturation.
import torch
import torch.nn as nn

MAGIC = 12582912.0  # 1.5 * 2**23


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
        r = (v + MAGIC) - MAGIC
        return torch.clamp(r + self.zero_point, -128, 127).to(torch.int8)


def get_inputs():
    return [torch.randn(64, 256)]


def get_init_inputs():
    return [0.10000000149011612, 5]
