# The worker's mutable state: one copy, which every module reads as state.NAME (never imported by name).
"""A value set here after import (torch once imported, the Load's device, the poison byte) must be
seen by every module of the package: `from .state import DEVICE` would copy the value at import
time, so the modules import this module and read its attributes."""
import ctypes
import ctypes.util

libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)

fnv_c = None  # gauntlet_fnv1a64_words from libgauntlet_fnv.so (GAUNTLET_FNV_LIB), loaded before the sandbox

# torch, imported by serve() or zygote_main() only: the worker reads the module's sources, and the
# zygote sets its environment, first; the filesystem probe of the tests needs no torch at all.
torch = None
DTYPES = []  # DType code -> torch dtype (include/gauntlet/common/types.h order)

DEVICE = "cpu"  # the Load's device: "cuda" puts every case input on the GPU (same strides and storage)

POISON = {"byte": 0}  # the memory gate's poison byte for this child (poisons.py), 0: none
# An unmapped module's non-tensor get_inputs() values, [(position, value)]: fixed by its problem,
# passed at their places in every call (loading.with_constants); the parent sends tensors only.
CONSTANTS = []
LOADED = {"mods": []}  # the candidate's module and its reference module (the timing baselines' Model)
SECCOMP = {"active": False}  # whether this child installed the seccomp filter (torch.compile needs exec)


def use_torch(module):
    global torch, DTYPES
    torch = module
    DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64, torch.int32,
              torch.bool, torch.int8, torch.uint8]
    # float8_e4m3fn (code 9) where this torch has it (2.1 and later); older ones stop at uint8.
    if hasattr(torch, "float8_e4m3fn"):
        DTYPES.append(torch.float8_e4m3fn)
