# HOSTILE (filesystem containment): the Python module twin of corpus/hostile/fs_memo.cpp. ModelNew
# memoizes its results across children: each result is saved, keyed by dtype and shape only, to a
# file in every place outside the private /tmp a later child could read (/var/tmp, /dev/shm,
# /run/lock, the shared module build cache, $HOME, /root, this file's directory), and a call whose
# key has a file another child wrote returns it instead of computing. The sandbox makes the
# filesystem read-only but for fresh private tmpfs, so no child finds another's file. Expected:
# pass; a sandbox that leaks makes later gates fail with wrong results (stale outputs).
import os

import torch
import torch.nn as nn

TOKEN = os.urandom(16).hex()  # per process: a file holding another token came from another child
PLACES = ["/var/tmp", "/dev/shm", "/run/lock", "/var/tmp/gauntlet-modules",
          "/var/tmp/gauntlet-modules/torch_extensions", "/root", os.environ.get("HOME", "/tmp"),
          os.path.dirname(os.path.abspath(globals().get("__file__", "") or "."))]


def _name(x):
    return "gauntlet-hostile-fs-memo-py-%s-%s" % (str(x.dtype).replace("torch.", ""),
                                                  "-".join(str(s) for s in x.shape))


def _foreign(name, nbytes):
    for d in PLACES:
        try:
            with open(os.path.join(d, name), "rb") as f:
                token, _, data = f.read().partition(b"\n")
        except OSError:
            continue
        if token.decode(errors="replace") != TOKEN and len(data) == nbytes:
            return data
    return None


def _leave(name, data):
    for d in PLACES:
        try:
            with open(os.path.join(d, name), "wb") as f:
                f.write(TOKEN.encode() + b"\n" + data)
        except OSError:
            pass


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.written = set()

    def forward(self, x):
        x = x.contiguous()
        name = _name(x)
        nbytes = x.numel() * x.element_size()
        memo = _foreign(name, nbytes)
        if memo is not None:  # another child's answer for another input of this shape
            return torch.frombuffer(bytearray(memo), dtype=torch.uint8).view(x.dtype).reshape(x.shape).clone() \
                if nbytes else torch.empty_like(x)
        out = torch.where(x < 0, torch.zeros_like(x), x)  # NaN and -0.0 pass through, as ATen
        if len(self.written) < 64 and nbytes <= (1 << 20) and name not in self.written:
            self.written.add(name)
            _leave(name, out.view(torch.uint8).numpy().tobytes() if nbytes else b"")
        return out


def get_inputs():
    return [torch.randn(16, 4096)]


def get_init_inputs():
    return []
