#!/usr/bin/env python3
"""Which of the sandbox's layers stop CUDA from starting? Each case forks a child (CUDA never
initialized in this parent), applies some of the worker's restrictions, then initializes CUDA and
runs one tiny op. Prints one line per case. Run on the GPU machine: python3 tools/gpu/probe_cuda_sandbox.py"""
import os, resource, sys, ctypes, ctypes.util, traceback

import torch  # imported once, CUDA untouched (as gauntlet's zygote)

libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWNET, CLONE_NEWPID = 0x20000, 0x8000000, 0x40000000, 0x20000000


def nobody():
    os.setgroups([])
    os.setresgid(65534, 65534, 65534)
    os.setresuid(65534, 65534, 65534)


def unshare(flags):
    if libc.unshare(flags) != 0:
        raise OSError(ctypes.get_errno(), "unshare")


def private_tmp():
    unshare(CLONE_NEWNS)
    MS_REC, MS_PRIVATE = 16384, 1 << 18
    if libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        raise OSError(ctypes.get_errno(), "mount private")
    if libc.mount(b"tmpfs", b"/tmp", b"tmpfs", 0, b"size=256m,mode=1777") != 0:
        raise OSError(ctypes.get_errno(), "mount tmpfs")


def fresh_proc():
    # after the pid namespace's first child exists: a procfs of that namespace on /proc
    if libc.mount(b"proc", b"/proc", b"proc", 2 | 4 | 8, None) != 0:  # nosuid, nodev, noexec
        raise OSError(ctypes.get_errno(), "mount proc")


def lim(res, v):
    resource.setrlimit(res, (v, v))


def no_new_privs():
    if libc.prctl(38, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl")


CASES = {
    "plain": [],
    "uid=nobody": [nobody],
    "nofile=256": [lambda: lim(resource.RLIMIT_NOFILE, 256)],
    "data=4G": [lambda: lim(resource.RLIMIT_DATA, 4 << 30)],
    "fsize=64M": [lambda: lim(resource.RLIMIT_FSIZE, 64 << 20)],
    "cpu=60": [lambda: lim(resource.RLIMIT_CPU, 60)],
    "no_new_privs": [no_new_privs],
    "net": [lambda: unshare(CLONE_NEWNET)],
    "ipc": [lambda: unshare(CLONE_NEWIPC)],
    "mount+private-tmp": [private_tmp],
    "pid(child is pid 1)": ["pid"],
    "pid + mount + fresh /proc": [private_tmp, "pid", fresh_proc],
    "all + fresh /proc": [lambda: unshare(CLONE_NEWNET | CLONE_NEWIPC), private_tmp, "pid", fresh_proc, nobody,
                          lambda: lim(resource.RLIMIT_NOFILE, 256), lambda: lim(resource.RLIMIT_FSIZE, 64 << 20),
                          no_new_privs],
    "all but uid": [lambda: unshare(CLONE_NEWNET | CLONE_NEWIPC), private_tmp, "pid",
                    lambda: lim(resource.RLIMIT_NOFILE, 256), no_new_privs],
    "all (as gauntlet, no seccomp)": [lambda: unshare(CLONE_NEWNET | CLONE_NEWIPC), private_tmp, "pid", nobody,
                                      lambda: lim(resource.RLIMIT_NOFILE, 256), lambda: lim(resource.RLIMIT_FSIZE, 64 << 20),
                                      no_new_privs],
}


def run_case(steps):
    for s in steps:
        if s == "pid":
            unshare(CLONE_NEWPID)
            pid = os.fork()  # the next child is pid 1 of the new namespace
            if pid:
                _, st = os.waitpid(pid, 0)
                os._exit(os.waitstatus_to_exitcode(st))
        else:
            s()
    try:
        n = torch.cuda.device_count()
        y = torch.relu(torch.tensor([-1.0, 2.0], device="cuda")).cpu().tolist()
        print(f"    ok: {n} device(s), relu -> {y}", flush=True)
        os._exit(0)
    except Exception as e:
        print("    FAILED: " + str(e).splitlines()[0], flush=True)
        os._exit(1)


for name, steps in CASES.items():
    print(f"{name}:", flush=True)
    pid = os.fork()
    if pid == 0:
        try:
            run_case(steps)
        except Exception:
            traceback.print_exc()
            os._exit(2)
    _, st = os.waitpid(pid, 0)
    print(f"  -> exit {os.waitstatus_to_exitcode(st)}", flush=True)
