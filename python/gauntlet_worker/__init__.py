# The worker side of gauntlet's parent<->worker protocol for Python modules (run by gauntlet_pyworker.py).
"""Started by gauntlet (never by hand) as `python3 gauntlet_pyworker.py --serve --policy HEX`, through
the same fork+exec launcher as the C++ worker (namespaces come from the launcher's clone). It reads
frames on fd 3 and writes them on fd 4, exactly as src/common/wire.cpp encodes them:

  frame   = u32 magic "GNT1" | u32 type | u64 length | payload | u64 FNV-1a-64(payload)
  Load    -> LoadReply     so_path = the module's .py file, entry = the class name (ModelNew)
  Case    -> CaseReply     the module is called with the case's tensor arguments, in schema order
  Time    -> TimeReply     the timing gate's timed loop (candidate and a baseline interleaved)
  Peaks   -> PeaksReply    the device's copy and matmul rates
  Bye / EOF -> exit 0

KernelBench-style module: the file defines `class ModelNew(nn.Module)` (the entry), and optionally
`get_init_inputs()` (constructor arguments). A schema-mapped module fixes its attributes at
construction (the manifest's "attrs" must say which values it supports): the case's attribute
arguments (ints, doubles, bools) are NOT passed to forward(), only its tensors, in order.

Sandbox layers applied before the module's code runs (sandbox.py, mounts.py; docs/modules.md): a
private /tmp (when the launcher gave a mount namespace), privilege drop (root outside a user
namespace -> nobody), rlimits (RLIMIT_DATA from the policy, CORE, FSIZE, NOFILE, CPU),
PR_SET_NO_NEW_PRIVS and a seccomp filter mirroring src/worker/sandbox_child.cpp (python3-seccomp,
when installed). The LoadReply's sandbox_notes say which are active.

Every module of the package is imported here, when the entry script starts: a child enters its
sandbox (seccomp, a read-only filesystem) before the module's code runs, and nothing of the
worker's own may be left to load after that. Mutable state lives in state.py only.
"""
import os
import sys

from . import state, wire, messages, mounts, sandbox, building, loading, poisons, cases  # noqa: F401
from . import reference, standard_check, baselines, timing, serve, zygote, pch  # noqa: F401
from .sandbox import decode_policy
from .wire import STATUS_FD


def main(argv):
    if len(argv) >= 2 and argv[1] == "--pch":
        return pch.main(argv[1:])  # run by the parent, outside any sandbox: no kernel code
    if len(argv) >= 2 and argv[1] == "--zygote":
        return zygote.zygote_main()
    if len(argv) >= 4 and argv[1] == "--serve" and argv[2] == "--policy":
        try:
            policy = decode_policy(argv[3])
        except Exception:
            sys.stderr.write("gauntlet_pyworker: malformed --policy\n")
            return 2
        try:
            os.close(STATUS_FD)
        except OSError:
            pass
        return serve.serve(policy)
    sys.stderr.write("gauntlet_pyworker is started by gauntlet, not by hand.\n"
                     "usage: gauntlet_pyworker.py --serve --policy HEX | --zygote\n")
    return 2
