# Planted bug (mapped to the group_by_sum schema, issue 20): the group-by as a one-hot matrix
# product, values @ (keys[:, None] == arange(G)), the usual vectorized trick. On finite data it is
# as accurate as a float32 sum, so allclose accepts it; but 0 * NaN is NaN and 0 * inf is NaN, so
# one NaN or infinite value makes every group NaN, where the contract keeps it in its own group.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, num_groups):
        super().__init__()
        self.num_groups = num_groups

    def forward(self, keys, values):
        return torch.zeros(self.num_groups, dtype=values.dtype).index_add_(0, keys, values)


def check(keys, values, num_groups):
    if keys.dtype != torch.int64 or keys.dim() != 1 or values.dim() != 1 or keys.numel() != values.numel():
        raise ValueError("group_by_sum: keys and values must be 1-D of one length, keys int64")
    if keys.numel() and (int(keys.min()) < 0 or int(keys.max()) >= num_groups):
        raise ValueError("group_by_sum: a key outside [0, num_groups)")


class ModelNew(nn.Module):
    def __init__(self, num_groups):
        super().__init__()
        self.num_groups = num_groups

    def forward(self, keys, values):
        check(keys, values, self.num_groups)
        groups = torch.arange(self.num_groups, dtype=torch.int64, device=keys.device)
        onehot = (keys[:, None] == groups[None, :]).to(torch.float32)
        return (values.to(torch.float32)[None, :] @ onehot)[0].to(values.dtype)  # the bug: 0 * NaN spreads


def get_inputs():
    return [torch.randint(0, 64, (4096,)), torch.randn(4096)]


def get_init_inputs():
    return [64]
