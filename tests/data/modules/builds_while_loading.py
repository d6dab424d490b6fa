# A KernelBench-format module that builds while it loads, as a load_inline one does: it takes
# torch's FileBaton over a lock file that a killed builder left behind, "compiles" for 3 s, and
# releases it. tests/e2e/modules_test.cpp runs it under --timeout 2: a module's load has the
# builder's limit, not the gate's, and a stale build lock does not block it (docs/modules.md).
import os
import tempfile
import time

import torch
from torch.utils.file_baton import FileBaton


def _build():
    lock = os.path.join(tempfile.mkdtemp(), "lock")
    open(lock, "w").close()  # the lock file of a builder killed mid-build
    baton = FileBaton(lock)
    if not baton.try_acquire():
        raise RuntimeError("a stale build lock blocks the build")
    try:
        time.sleep(3)
    finally:
        baton.release()


_build()


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return x.clamp(min=0)


def get_inputs():
    return [torch.randn(16, 64)]


def get_init_inputs():
    return []
