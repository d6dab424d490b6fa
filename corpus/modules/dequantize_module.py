# Correct control (mapped to the dequantize schema, issue 20): a KernelBench-style int8 dequantizer
# in plain torch, without torch.dequantize or a quantized tensor (the schema forbids them): the
# exact integer difference x - zero_point (int64), times the scale rounded to float32 as torch's
# qint8 tensors hold it, in float64 (an integer below 2^9 times a float32 is exact there), rounded
# once to float32.
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
        difference = x.to(torch.int64) - self.zero_point
        return (difference.to(torch.float64) * self.scale).to(torch.float32)


def get_inputs():
    return [torch.randint(-128, 128, (64, 256), dtype=torch.int8)]


def get_init_inputs():
    return [0.10000000149011612, 5]
