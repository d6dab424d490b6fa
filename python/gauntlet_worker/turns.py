# A case's GPU turn as the worker holds it: asked for, paused while Triton compiles, given back.
"""The parent lets one child of a GPU execute at a time (src/sandbox/worker_call.cpp, WorkerSession::call).
A Triton kernel compiles at its first launch in every fresh child, 1.5-2.5 s of LLVM and ptxas on
the H200 for KernelBench's kernels, with the GPU idle: with a dozen children per kernel that was
most of a Triton module's GPU-serial time. So the worker gives the turn back while Triton compiles
and asks for it again before the launch (frames TurnRelease, TurnRequest, TurnGrant; wire.h).

Only the worker speaks this protocol: a module that writes turn frames itself breaks it (the parent
calls that a protocol violation). Nothing here runs unless the case came with turn_handshake."""
import sys
import time

from .wire import REPLY_FD, REQUEST_FD, T_TURN_GRANT, T_TURN_RELEASE, T_TURN_REQUEST, read_frame, write_frame


class TurnLost(Exception):
    """The parent did not grant a turn the worker asked for: the pipe is gone or out of step."""


TURN = {"handshake": False, "holding": False, "waited": 0.0}


def begin(handshake):
    """A case starts: its turn is asked for (and waited on) when handshake is set."""
    TURN.update(handshake=bool(handshake), holding=False, waited=0.0)
    if handshake:
        take()
        TURN["waited"] = 0.0  # from here on, only waits inside the call: not the kernel's seconds


def take():
    t0 = time.perf_counter()
    write_frame(REPLY_FD, T_TURN_REQUEST, b"")
    grant = read_frame(REQUEST_FD)
    if grant is None or grant[0] != T_TURN_GRANT:
        raise TurnLost("no GPU turn granted (got %s)" % ("end of pipe" if grant is None else "frame %d" % grant[0]))
    TURN["waited"] += time.perf_counter() - t0
    TURN["holding"] = True


def give_back():
    if TURN["handshake"] and TURN["holding"]:
        write_frame(REPLY_FD, T_TURN_RELEASE, b"")
        TURN["holding"] = False


def end():
    """The case's outputs are on the host: the GPU is the next child's while this one replies."""
    give_back()
    TURN["handshake"] = False


def holding():
    return TURN["holding"]


class paused:
    """`with paused():` CPU-only work inside a case (a JIT compile) runs without the turn."""

    def __enter__(self):
        self.active = TURN["handshake"] and TURN["holding"]
        if self.active:
            give_back()
        return self

    def __exit__(self, *exc):
        if self.active:
            take()  # a TurnLost here ends the case as the worker's error, as a lost grant does
        return False


def pause_triton_compiles():
    """Wraps Triton's compile step (JITFunction._do_compile, Triton 3.3 and later) in paused(), once.

    Called before each case: the module imports Triton while it loads, after the worker's own imports.
    An older Triton without that method keeps its compiles inside the turn, as before."""
    jit = sys.modules.get("triton.runtime.jit")
    cls = getattr(jit, "JITFunction", None) if jit else None
    original = getattr(cls, "_do_compile", None) if cls else None
    if original is None or getattr(original, "_gauntlet_paused", False):
        return False

    def _do_compile(self, *args, **kwargs):
        with paused():
            return original(self, *args, **kwargs)

    _do_compile._gauntlet_paused = True
    cls._do_compile = _do_compile
    return True
