# The zygote (`--zygote`): torch imported once, one sandboxed child cloned per gate, each serving as --serve does.
import ctypes
import errno
import os
import sys
import time

from . import serve, state
from .sandbox import NS_IPC, NS_MOUNT, NS_NET, NS_PID, NS_USER, decode_policy
from .wire import REPLY_FD, REQUEST_FD, STATUS_FD, Reader, load_fast_checksum

# The protocol of src/worker/zygote.cpp, so the launcher drives both the same way: fd 3 is a
# SOCK_SEQPACKET socket; the zygote sends u32 (its thread count: forking is safe only with one);
# each request is u32 wanted namespaces + str policy hex with four descriptors (request, reply,
# capture, status) as SCM_RIGHTS; the zygote clones a child with CLONE_PARENT (gauntlet's own
# child, so gauntlet waits for it and kills it) in as many of the namespaces as the host allows,
# and answers i64 pid, u32 namespaces achieved, i64 errno. The child moves the descriptors to
# 3/4/1/2, enters its own process group and serves exactly as `--serve` does: the sandbox is
# applied by the child itself, before the module's code runs. The zygote never touches CUDA or
# NVML (PYTORCH_NVML_BASED_CUDA_CHECK=1): each child initializes its own GPU state.

SYS_CLONE = 56  # x86_64
CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x20000, 0x8000000, 0x10000000, 0x20000000, 0x40000000
CLONE_PARENT = 0x8000
PR_SET_PDEATHSIG = 1


def _clone_flags(bits):
    f = 0
    for bit, flag in ((NS_USER, CLONE_NEWUSER), (NS_NET, CLONE_NEWNET), (NS_MOUNT, CLONE_NEWNS),
                      (NS_PID, CLONE_NEWPID), (NS_IPC, CLONE_NEWIPC)):
        if bits & bit:
            f |= flag
    return f


def clone_sandboxed(wanted):
    """(pid, achieved bits, errno): raw clone(2), dropping namespaces the host refuses, as zygote.cpp."""
    import signal
    bits = wanted
    for attempt, drop in enumerate((NS_USER, NS_PID, NS_NET, NS_IPC, NS_MOUNT, 0)):
        pid = state.libc.syscall(SYS_CLONE, ctypes.c_ulong(_clone_flags(bits) | CLONE_PARENT | int(signal.SIGCHLD)),
                            None, None, None, None)
        if pid >= 0:
            return pid, bits, 0
        err = ctypes.get_errno()
        if err not in (errno.EPERM, errno.EINVAL, errno.ENOSPC, errno.EUSERS):
            return -1, 0, err
        bits &= ~drop
    return -1, 0, errno.EPERM


def _write_id_maps(uid, gid):
    for path, text in (("/proc/self/setgroups", "deny"), ("/proc/self/uid_map", "0 %d 1\n" % uid),
                       ("/proc/self/gid_map", "0 %d 1\n" % gid)):
        try:
            with open(path, "w") as f:
                f.write(text)
        except OSError:
            pass


def _arrange_fds(req, rep, capture, status):
    null_fd = os.open("/dev/null", os.O_RDONLY)
    r, p, c = (os.dup(x) for x in (req, rep, capture))
    s = os.dup(status) if status >= 0 else -1
    for fd, target in ((null_fd, 0), (c, 1), (c, 2), (r, REQUEST_FD), (p, REPLY_FD)):
        os.dup2(fd, target)  # dup2 leaves the new descriptor inheritable, as the worker expects
    if s >= 0:
        os.dup2(s, STATUS_FD)
    os.closerange(STATUS_FD + 1 if s >= 0 else STATUS_FD, 65536)


def _thread_count():
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 0


def zygote_main():
    import signal
    import socket
    import struct as _struct
    # Ctrl-C is gauntlet's to handle (it kills the zygote and its children): no KeyboardInterrupt
    # traceback from here or from a forked child, whatever the process group.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
    import torch as _torch
    state.use_torch(_torch)
    try:
        import triton  # noqa: F401 - imported once here, not per child, when present
    except Exception:  # noqa: B902 - absent or broken: the module's own import reports it
        pass
    for name in ("seccomp", "copy", "json", "types", "torch.autograd.profiler"):
        try:
            __import__(name)
        except ImportError:
            pass
    load_fast_checksum()
    # LibTorch's lazy first uses, once, on one thread (the children may set more).
    state.torch.set_num_threads(1)
    a = state.torch.ones(4, 4)
    _ = (a.t().contiguous() + a).to(state.torch.float16).to(state.torch.bfloat16).double().sum().item()
    state.libc.prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0)
    sock = socket.socket(fileno=3)
    sock.send(_struct.pack("<I", _thread_count()))
    gauntlet_pid = os.getppid()
    children = []
    while True:
        try:
            msg, anc, _flags, _addr = sock.recvmsg(4096, socket.CMSG_SPACE(4 * 4))
        except OSError:
            break
        if not msg:
            break
        fds = []
        for level, kind, data in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.extend(_struct.unpack("<%di" % (len(data) // 4), data[:len(data) - len(data) % 4]))
        pid, achieved, err, clone_ns = -1, 0, errno.EINVAL, 0
        try:
            r = Reader(msg)
            wanted = r.u32()
            policy = decode_policy(r.str())
        except Exception:  # noqa: B902 - a malformed request gets EINVAL
            policy = None
        if policy is not None and len(fds) == 4:
            uid, gid = os.getuid(), os.getgid()
            clone_start = time.monotonic_ns()
            pid, achieved, err = clone_sandboxed(wanted)
            clone_ns = time.monotonic_ns() - clone_start
            if pid == 0:
                code = 3
                # As zygote.cpp: the child dies with gauntlet's forking thread (CLONE_PARENT).
                state.libc.prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0)
                if os.getppid() not in (0, gauntlet_pid):
                    os._exit(1)
                try:
                    if achieved & NS_USER:
                        _write_id_maps(uid, gid)
                    _arrange_fds(fds[0], fds[1], fds[2], fds[3] if achieved & NS_PID else -1)
                    os.setpgid(0, 0)
                    policy.namespaces = achieved
                    try:
                        os.close(STATUS_FD)
                    except OSError:
                        pass
                    code = serve.serve(policy)
                finally:
                    sys.stdout.flush()
                    os._exit(code)
            if pid > 0:
                children.append(pid)
        for fd in fds:
            os.close(fd)
        try:
            sock.send(_struct.pack("<qIqq", pid, achieved, err, clone_ns))
        except OSError:
            break
    for pid in children:  # the parent went away: take every child started with it
        try:
            os.kill(pid, 9)
        except OSError:
            pass
    return 0
