# The sandbox a child enters before the module's code runs: the policy, privileges, rlimits, seccomp.
import ctypes
import errno
import os
import resource

from . import state
from .mounts import (BUILD_DIR_VARS, MS_NODEV, MS_NOEXEC, MS_NOSUID, MS_PRIVATE, MS_REC, WORLD_WRITABLE,
                     lock_down_filesystem, mount, mount_build_dirs, open_build_dirs)
from .wire import Reader

# Namespace bits (include/gauntlet/sandbox/sandbox_policy.h).
NS_USER, NS_NET, NS_MOUNT, NS_PID, NS_IPC = 1, 2, 4, 8, 16
PR_SET_NO_NEW_PRIVS = 38
PR_SET_PDEATHSIG, PR_GET_PDEATHSIG = 1, 2


class Policy:
    """The launcher's policy (src/sandbox/sandbox_policy.cpp encode_policy)."""
    memory_limit_bytes = 4 << 30
    cpu_seconds = 0
    file_size_bytes = 64 << 20
    namespaces = 0
    seccomp = True
    drop_privileges = True
    private_tmp = True
    tool_ipc = False


def decode_policy(text):
    r = Reader(bytes.fromhex(text))
    p = Policy()
    p.memory_limit_bytes = r.i64()
    p.cpu_seconds = r.i64()
    p.file_size_bytes = r.i64()
    p.namespaces = r.u32()
    p.seccomp = r.u8() != 0
    p.drop_privileges = r.u8() != 0
    p.private_tmp = r.u8() != 0
    if not r.at_end():
        p.tool_ipc = r.u8() != 0
    if not r.at_end():
        raise ValueError("trailing bytes in the policy")
    return p


def install_seccomp(seccomp, toolchain=False):
    """The C++ child's filter (sandbox_child.cpp install_seccomp, CPU variant). With `toolchain`
    (CUDA modules: load_inline runs ninja and nvcc, Triton runs ptxas, as child processes) exec and
    process creation stay allowed; everything else is trapped as for a CPU child (docs/modules.md)."""
    import signal
    f = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    trap = seccomp.TRAP
    procs = [] if toolchain else ["execve", "execveat", "fork", "vfork"]
    network = ["socketpair", "accept", "accept4"] + ([] if toolchain else ["socket", "connect", "bind", "listen"])
    for name in network + procs + [
                 "ptrace", "process_vm_readv", "process_vm_writev", "mount",
                 "umount2", "unshare", "setns", "chroot", "pivot_root", "bpf", "perf_event_open", "keyctl",
                 "add_key", "request_key", "io_uring_setup", "kexec_load", "init_module", "finit_module",
                 "tkill", "pidfd_open", "pidfd_send_signal", "pidfd_getfd"]:
        try:
            f.add_rule(trap, name)
        except Exception:  # a name this libseccomp does not know on this architecture
            pass
    if toolchain:
        # The CUDA driver's start probes for an MPS server: socket(AF_UNIX, SOCK_SEQPACKET), then
        # connect() to its control path, carrying on at ENOENT; a refused socket() makes CUDA fail
        # (error 304). As in the C++ child: only that kind of socket, every connect() answers
        # ENOENT, bind/listen stay allowed (private network namespace and /tmp; nothing connects).
        AF_UNIX, SOCK_TYPE_MASK = 1, 0xf
        f.add_rule(trap, "socket", seccomp.Arg(0, seccomp.NE, AF_UNIX))
        for sock_type in (1, 2, 3, 4, 10):  # stream, dgram, raw, rdm, packet: all but seqpacket
            f.add_rule(trap, "socket", seccomp.Arg(1, seccomp.MASKED_EQ, SOCK_TYPE_MASK, sock_type))
        f.add_rule(seccomp.ERRNO(errno.ENOENT), "connect")
    CLONE_THREAD = 0x10000
    if not toolchain:
        f.add_rule(trap, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, CLONE_THREAD, 0))
    f.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    me = os.getpid()
    for name in ["kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo"]:
        f.add_rule(trap, name, seccomp.Arg(0, seccomp.NE, me))
    # The module must not catch SIGSYS (a trapped call then kills the process: crash, "killed by SIGSYS").
    # Only a new action is refused (Python's subprocess queries each signal's, a NULL new action).
    # Not in a toolchain child: ninja's posix_spawn resets every signal to SIG_DFL, SIGSYS included,
    # in each compiler it starts (seen as "killed by SIGSYS" of every CPU load_inline build), and
    # the filter cannot tell SIG_DFL from a handler. There a caught SIGSYS still leaves the trapped
    # call refused; it only keeps the child alive.
    if not toolchain:
        f.add_rule(seccomp.KILL_PROCESS if hasattr(seccomp, "KILL_PROCESS") else seccomp.KILL,
                   "rt_sigaction", seccomp.Arg(0, seccomp.EQ, int(signal.SIGSYS)), seccomp.Arg(1, seccomp.NE, 0))
    f.load()


def enter_sandbox(policy, device="cpu", toolchain=None, build_dirs=None, build_writable=False, readonly_dirs=()):
    """Returns (notes, error). Mirrors src/worker/sandbox_child.cpp enter_sandbox for a CPU child;
    a CUDA child has no RLIMIT_DATA (the driver reserves tens of GiB of address space: the parent
    watches resident memory instead) and the toolchain variant of the filter. The filesystem is
    read-only but for the private /tmp and fresh tmpfs over the other world-writable places; the
    module build caches (`build_dirs`, default: the directories BUILD_DIR_VARS name) stay visible
    at their paths, read-only unless `build_writable` (a build child); `readonly_dirs` (the shared
    precompiled header a build child reads) stay visible read-only whatever the child."""
    layers = ["isolation:"]
    if build_dirs is None:
        build_dirs = [os.environ[v] for v in BUILD_DIR_VARS if os.environ.get(v)]
    private_tmp = False
    if (policy.namespaces & NS_MOUNT) and policy.private_tmp:
        ok, why = mount(None, "/", None, MS_REC | MS_PRIVATE, None)
        if ok:
            ok, why = mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=256m,mode=1777")
        private_tmp = ok
        layers.append("private-tmp" if ok else "private-tmp=unavailable(%s)" % why)
    if device == "cuda" and (policy.namespaces & NS_PID) and (policy.namespaces & NS_MOUNT):
        # The CUDA driver needs /proc to match the pid namespace it runs in (else
        # cudaGetDeviceCount fails with error 304), as src/worker/sandbox_child.cpp does.
        if not policy.private_tmp:
            mount(None, "/", None, MS_REC | MS_PRIVATE, None)
        ok, why = mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
        layers.append("private-proc" if ok else "private-proc=unavailable(%s)" % why)
    if any(n.startswith("nvidia") for n in os.listdir("/dev")):
        layers.append("gpu-visible(the Python worker does not hide GPU nodes yet)")
    # Nothing a child writes may reach a later child (its own next gate, or another module's):
    # every mount read-only, fresh tmpfs over the world-writable places, the build caches bound
    # back (read-only for a gate child). After the /proc mount, which the read-only pass keeps.
    if private_tmp:
        fds = open_build_dirs(build_dirs)
        ro_fds = open_build_dirs(readonly_dirs)
        layers.append(lock_down_filesystem([d for d in WORLD_WRITABLE if d != "/tmp"], ["/tmp"]))
        note, error = mount_build_dirs(fds, build_writable)
        if error:
            return None, error
        layers[-1] += note
        if ro_fds:
            note, error = mount_build_dirs(ro_fds, False)
            if error:
                return None, error
            layers[-1] += note
    else:
        layers.append("fs-writable(%s)" % ("no private /tmp" if policy.namespaces & NS_MOUNT else "no mount namespace"))
    if policy.drop_privileges and os.geteuid() == 0 and not (policy.namespaces & NS_USER):
        try:
            # The kernel clears the parent-death signal on a change of credentials, and this child
            # (PID 1 of its namespace, deaf to SIGTERM) would then outlive a killed gauntlet: the
            # signal it had is asked for again (sandbox_child.cpp does the same).
            death_signal = ctypes.c_int(0)
            state.libc.prctl(PR_GET_PDEATHSIG, ctypes.byref(death_signal), 0, 0, 0)
            os.setgroups([])
            os.setresgid(65534, 65534, 65534)
            os.setresuid(65534, 65534, 65534)
            if death_signal.value:
                state.libc.prctl(PR_SET_PDEATHSIG, death_signal.value, 0, 0, 0)
        except OSError as e:
            return None, "cannot drop privileges: %s" % e
        layers.append("uid=nobody")
    try:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_FSIZE, (policy.file_size_bytes, policy.file_size_bytes))
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
        if policy.memory_limit_bytes > 0 and device == "cpu":
            resource.setrlimit(resource.RLIMIT_DATA, (policy.memory_limit_bytes, policy.memory_limit_bytes))
        if policy.cpu_seconds > 0:
            resource.setrlimit(resource.RLIMIT_CPU, (policy.cpu_seconds, policy.cpu_seconds))
    except (OSError, ValueError) as e:
        return None, "setrlimit failed: %s" % e
    layers.append("rlimits")
    if state.libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return None, "PR_SET_NO_NEW_PRIVS failed"
    layers.append("no-new-privs")
    if policy.seccomp:
        try:
            import seccomp  # python3-seccomp
        except ImportError:
            seccomp = None
            layers.append("seccomp=unavailable(python3-seccomp not installed)")
        if seccomp is not None:
            try:
                toolchain = device != "cpu" if toolchain is None else toolchain
                install_seccomp(seccomp, toolchain=toolchain)
                state.SECCOMP["active"] = True
                layers.append("seccomp(toolchain: exec allowed for nvcc/ninja/ptxas)" if toolchain else "seccomp")
            except Exception as e:
                return None, "seccomp filter failed: %s" % e
    return " ".join(layers), None
