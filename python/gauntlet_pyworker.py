#!/usr/bin/env python3
"""gauntlet-pyworker: the worker side of gauntlet's parent<->worker protocol for Python modules.

Started by gauntlet (never by hand) as `python3 gauntlet_pyworker.py --serve --policy HEX`, through
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

Sandbox layers applied here before the module's code runs (docs/modules.md): a private /tmp (when
the launcher gave a mount namespace), privilege drop (root outside a user namespace -> nobody),
rlimits (RLIMIT_DATA from the policy, CORE, FSIZE, NOFILE, CPU), PR_SET_NO_NEW_PRIVS and a seccomp
filter mirroring src/worker/sandbox_child.cpp (python3-seccomp, when installed). The LoadReply's
sandbox_notes say which are active.
"""

import ctypes
import ctypes.util
import errno
import os
import resource
import struct
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gauntlet_module_build  # noqa: E402 - beside this script, wherever it is installed

MAGIC = 0x31544E47
MAX_FRAME = 8 << 30

T_LOAD, T_LOAD_REPLY, T_CASE, T_CASE_REPLY, T_VIOLATION, T_BYE, T_SIGNAL = 1, 2, 3, 4, 5, 6, 7
T_TIME, T_TIME_REPLY, T_PEAKS, T_PEAKS_REPLY = 8, 9, 10, 11

REQUEST_FD, REPLY_FD, STATUS_FD = 3, 4, 5

CALL_OK, CALL_EXCEPTION, CALL_OOM, CALL_BAD_ARGS = 0, 1, 2, 3
WORKER_INTERNAL_ERROR = 100

# Namespace bits (include/gauntlet/sandbox_policy.h).
NS_USER, NS_NET, NS_MOUNT, NS_PID, NS_IPC = 1, 2, 4, 8, 16


# ---- framing ---------------------------------------------------------------------------------

def checksum(payload):
    """FNV-1a 64 over the payload, as wire.cpp's checksum()."""
    h = 1469598103934665603
    for c in payload:
        h = ((h ^ c) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


_fnv_c = None  # gauntlet_fnv1a64 from libgauntlet_fnv.so (GAUNTLET_FNV_LIB), loaded before the sandbox


def load_fast_checksum():
    global _fnv_c
    path = os.environ.get("GAUNTLET_FNV_LIB", "")
    if not path or not os.path.exists(path):
        return False
    try:
        lib = ctypes.CDLL(path)
        fn = lib.gauntlet_fnv1a64
        fn.restype = ctypes.c_uint64
        fn.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        if fn(b"gauntlet", 8) != checksum(b"gauntlet"):
            return False
        _fnv_c = fn
        return True
    except (OSError, AttributeError):
        return False


def _checksum_fast(payload):
    if _fnv_c is not None and len(payload) >= 64:
        return _fnv_c(bytes(payload), len(payload))
    return checksum(payload)


def read_exact(fd, n):
    chunks = []
    got = 0
    while got < n:
        try:
            b = os.read(fd, min(n - got, 1 << 20))
        except InterruptedError:
            continue
        if not b:
            return None if got == 0 and not chunks else b""
        chunks.append(b)
        got += len(b)
    return b"".join(chunks)


def read_frame(fd):
    """(type, payload), or None on EOF / a malformed frame."""
    head = read_exact(fd, 16)
    if not head or len(head) != 16:
        return None
    magic, ftype, length = struct.unpack("<IIQ", head)
    if magic != MAGIC or ftype < 1 or ftype > T_PEAKS_REPLY or length > MAX_FRAME:
        return None
    payload = read_exact(fd, length) if length else b""
    if payload is None or len(payload) != length:
        return None
    tail = read_exact(fd, 8)
    if not tail or len(tail) != 8:
        return None
    if struct.unpack("<Q", tail)[0] != _checksum_fast(payload):
        return None
    return ftype, payload


def write_frame(fd, ftype, payload):
    data = struct.pack("<IIQ", MAGIC, ftype, len(payload)) + payload + struct.pack("<Q", _checksum_fast(payload))
    view = memoryview(data)
    while view:
        try:
            k = os.write(fd, view)
        except InterruptedError:
            continue
        view = view[k:]
    return True


class Writer:
    def __init__(self):
        self.parts = []

    def u8(self, v):
        self.parts.append(struct.pack("<B", v & 0xFF))

    def u32(self, v):
        self.parts.append(struct.pack("<I", v & 0xFFFFFFFF))

    def u64(self, v):
        self.parts.append(struct.pack("<Q", v & 0xFFFFFFFFFFFFFFFF))

    def i64(self, v):
        self.parts.append(struct.pack("<q", v))

    def f64(self, v):
        self.parts.append(struct.pack("<d", v))

    def str(self, s):
        b = s.encode("utf-8", "replace") if isinstance(s, str) else bytes(s)
        self.u32(len(b))
        self.parts.append(b)

    def raw(self, b):
        self.parts.append(b)

    def bytes(self):
        return b"".join(self.parts)


class Truncated(Exception):
    pass


class Reader:
    def __init__(self, data):
        self.data = data
        self.pos = 0

    def _take(self, n):
        if len(self.data) - self.pos < n:
            raise Truncated("truncated message")
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def u8(self):
        return self._take(1)[0]

    def u32(self):
        return struct.unpack("<I", self._take(4))[0]

    def u64(self):
        return struct.unpack("<Q", self._take(8))[0]

    def i64(self):
        return struct.unpack("<q", self._take(8))[0]

    def f64(self):
        return struct.unpack("<d", self._take(8))[0]

    def str(self, max_len=1 << 20):
        n = self.u32()
        if n > max_len:
            raise Truncated("string too long")
        return self._take(n).decode("utf-8", "replace")

    def raw(self, n):
        return self._take(n)

    def at_end(self):
        return self.pos == len(self.data)


# ---- policy (src/common/sandbox_policy.cpp encode_policy) ----------------------------------------

class Policy:
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


# ---- sandbox -----------------------------------------------------------------------------------

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 16384, 1 << 18
MS_RDONLY, MS_REMOUNT, MS_BIND = 1, 32, 4096
PR_SET_NO_NEW_PRIVS = 38
# The world-writable places of a usual Linux host (src/common/fs_lockdown.cpp world_writable_dirs).
WORLD_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")
# The module build caches a gate child loads from (set by serve, from the environment).
BUILD_DIR_VARS = ("TORCH_EXTENSIONS_DIR", "TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR")
_MOUNT_OPTION_FLAGS = {"ro": MS_RDONLY, "nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC,
                       "noatime": 1024, "nodiratime": 2048, "relatime": 1 << 21, "strictatime": 1 << 24}


def _mount(src, target, fstype, flags, data):
    enc = lambda s: s.encode() if s is not None else None
    rc = _libc.mount(enc(src), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data))
    return rc == 0, os.strerror(ctypes.get_errno())


def parse_mountinfo(text):
    """[(mount point, per-mount flags)] of /proc/self/mountinfo (fs_lockdown.cpp parse_mountinfo)."""
    import re
    out = []
    for line in text.splitlines():
        f = line.split()
        if len(f) < 6:
            continue
        point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), f[4])
        flags = 0
        for o in f[5].split(","):
            flags |= _MOUNT_OPTION_FLAGS.get(o, 0)
        out.append((point, flags))
    return out


def _under(path, d):
    return path == d or path.startswith(d.rstrip("/") + "/")


def lock_down_filesystem(cover, keep):
    """As src/common/fs_lockdown.cpp lock_down_filesystem: inside the child's own (private) mount
    namespace, every mount but /proc's, `cover`'s and `keep`'s bind-remounted read-only with its
    other flags kept, then a fresh tmpfs on each directory of `cover` that exists. The note."""
    try:
        with open("/proc/self/mountinfo") as f:
            mounts = parse_mountinfo(f.read())
    except OSError as e:
        mounts, failed = [], "/proc/self/mountinfo: %s" % e.strerror
    else:
        failed = "" if mounts else "/proc/self/mountinfo: empty"
    seen, readonly = set(), 0
    for point, flags in mounts:
        if _under(point, "/proc") or point in seen:
            continue  # a stacked mount: the path reaches the top one
        seen.add(point)
        if any(_under(point, d) for d in tuple(cover) + tuple(keep)):
            continue
        ok, why = _mount(None, point, None, MS_BIND | MS_REMOUNT | MS_RDONLY | (flags & ~MS_RDONLY), None)
        if ok:
            readonly += 1
        elif ctypes.get_errno() != errno.ENOENT and not failed:  # unreachable by its path: not writable through it
            failed = "%s: %s" % (point, why)
    note = "fs-readonly=partial(%s)" % failed if failed else "fs-readonly(%d mounts)" % readonly
    covered, cover_failed = [], ""
    for d in cover:
        if not os.path.isdir(d) or os.path.islink(d):
            continue
        ok, why = _mount("tmpfs", d, "tmpfs", MS_NOSUID | MS_NODEV, "size=256m,mode=1777")
        if ok:
            covered.append(d)
        elif not cover_failed:
            cover_failed = "%s: %s" % (d, why)
    if covered:
        note += " private-tmpfs(%s)" % ",".join(covered)
    if cover_failed:
        note += " private-tmpfs=partial(%s)" % cover_failed
    return note


def _open_build_dirs(build_dirs):
    """{dir: O_PATH descriptor} of the build caches that exist, opened before /var/tmp is covered."""
    fds = {}
    for d in build_dirs:
        try:
            fds[d] = os.open(d, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            pass  # no build cache there: nothing to load from
    return fds


def _mount_build_dirs(fds, writable):
    """Each build cache back at its own path (under a fresh tmpfs, or over itself), read-only unless
    `writable` (the build child's). Returns the note, or an error: a gate child that could write
    its build cache could plant a .so for any later load."""
    done = 0
    for d, fd in fds.items():
        try:
            os.makedirs(d, exist_ok=True)
        except OSError as e:
            return None, "cannot make the mount point of the build cache %s: %s" % (d, e.strerror)
        ok, why = _mount("/proc/self/fd/%d" % fd, d, None, MS_BIND, None)
        if ok:
            ok, why = _mount(None, d, None, MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV | (0 if writable else MS_RDONLY), None)
        os.close(fd)
        if not ok:
            return None, "cannot mount the build cache %s: %s" % (d, why)
        done += 1
    if not done:
        return "", None
    return " build-cache-%s(%d)" % ("rw" if writable else "ro", done), None


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


def enter_sandbox(policy, device="cpu", toolchain=None, build_dirs=None, build_writable=False):
    """Returns (notes, error). Mirrors src/worker/sandbox_child.cpp enter_sandbox for a CPU child;
    a CUDA child has no RLIMIT_DATA (the driver reserves tens of GiB of address space: the parent
    watches resident memory instead) and the toolchain variant of the filter. The filesystem is
    read-only but for the private /tmp and fresh tmpfs over the other world-writable places; the
    module build caches (`build_dirs`, default: the directories BUILD_DIR_VARS name) stay visible
    at their paths, read-only unless `build_writable` (a build child)."""
    layers = ["isolation:"]
    if build_dirs is None:
        build_dirs = [os.environ[v] for v in BUILD_DIR_VARS if os.environ.get(v)]
    private_tmp = False
    if (policy.namespaces & NS_MOUNT) and policy.private_tmp:
        ok, why = _mount(None, "/", None, MS_REC | MS_PRIVATE, None)
        if ok:
            ok, why = _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=256m,mode=1777")
        private_tmp = ok
        layers.append("private-tmp" if ok else "private-tmp=unavailable(%s)" % why)
    if device == "cuda" and (policy.namespaces & NS_PID) and (policy.namespaces & NS_MOUNT):
        # The CUDA driver needs /proc to match the pid namespace it runs in (else
        # cudaGetDeviceCount fails with error 304), as src/worker/sandbox_child.cpp does.
        if not policy.private_tmp:
            _mount(None, "/", None, MS_REC | MS_PRIVATE, None)
        ok, why = _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
        layers.append("private-proc" if ok else "private-proc=unavailable(%s)" % why)
    if any(n.startswith("nvidia") for n in os.listdir("/dev")):
        layers.append("gpu-visible(the Python worker does not hide GPU nodes yet)")
    # Nothing a child writes may reach a later child (its own next gate, or another module's):
    # every mount read-only, fresh tmpfs over the world-writable places, the build caches bound
    # back (read-only for a gate child). After the /proc mount, which the read-only pass keeps.
    if private_tmp:
        fds = _open_build_dirs(build_dirs)
        layers.append(lock_down_filesystem([d for d in WORLD_WRITABLE if d != "/tmp"], ["/tmp"]))
        note, error = _mount_build_dirs(fds, build_writable)
        if error:
            return None, error
        layers[-1] += note
    else:
        layers.append("fs-writable(%s)" % ("no private /tmp" if policy.namespaces & NS_MOUNT else "no mount namespace"))
    if policy.drop_privileges and os.geteuid() == 0 and not (policy.namespaces & NS_USER):
        try:
            os.setgroups([])
            os.setresgid(65534, 65534, 65534)
            os.setresuid(65534, 65534, 65534)
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
    if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
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
                SECCOMP["active"] = True
                layers.append("seccomp(toolchain: exec allowed for nvcc/ninja/ptxas)" if toolchain else "seccomp")
            except Exception as e:
                return None, "seccomp filter failed: %s" % e
    return " ".join(layers), None


# ---- tensors (wire.cpp put_tensor / get_tensor) ------------------------------------------------

torch = None
DTYPES = []  # DType code -> torch dtype (include/gauntlet/types.h order)


def _init_dtypes():
    global DTYPES
    DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64, torch.int32,
              torch.bool, torch.int8, torch.uint8]


DEVICE = "cpu"  # the Load's device: "cuda" puts every case input on the GPU (same strides and storage)


def get_tensor(r):
    code = r.u8()
    ndim = r.u8()
    if code >= len(DTYPES):
        raise Truncated("tensor of an unsupported dtype")
    dtype = DTYPES[code]
    sizes = [r.i64() for _ in range(ndim)]
    strides = [r.i64() for _ in range(ndim)]
    offset = r.i64()
    nbytes = r.u64()
    if any(s < 0 for s in sizes) or any(s < 0 for s in strides) or offset < 0:
        raise Truncated("bad tensor layout")
    esize = torch.empty((), dtype=dtype).element_size()
    if nbytes % esize:
        raise Truncated("storage size not a multiple of the element size")
    if nbytes:
        base = torch.frombuffer(bytearray(r.raw(nbytes)), dtype=torch.uint8).clone().view(dtype)
    else:
        base = torch.empty(0, dtype=dtype)
    if DEVICE != "cpu":
        base = base.to(DEVICE)  # the whole storage, so the view keeps its strides, offset and overlaps
    return base.as_strided(sizes, strides, offset)


def tensor_bytes(t):
    """The bytes of a contiguous tensor (any dtype, bfloat16 and bool included)."""
    flat = t.reshape(-1)
    if flat.numel() == 0:
        return b""
    return flat.view(torch.uint8).numpy().tobytes()


def put_tensor(w, t):
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    t = t.contiguous()
    try:
        code = DTYPES.index(t.dtype)
    except ValueError:
        code = 255
    w.u8(code)
    w.u8(t.dim())
    for s in t.shape:
        w.i64(s)
    for s in t.stride():
        w.i64(s)
    w.i64(0)
    b = tensor_bytes(t) if code != 255 else b""
    w.u64(len(b))
    w.raw(b)


def _storage(t):
    # torch >= 2.0: untyped_storage(); Debian 12's torch 1.13: storage() (a TypedStorage).
    return t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()


def storage_span(t):
    s = _storage(t)
    return s.data_ptr(), s.nbytes()


def overlaps(a, b):
    pa, na = storage_span(a)
    pb, nb = storage_span(b)
    if not pa or not pb or na == 0 or nb == 0:
        return False
    return pa < pb + nb and pb < pa + na


def storage_bytes_tensor(t):
    """A uint8 copy of the whole storage under t (every byte, also those outside the view)."""
    nbytes = storage_span(t)[1]
    esize = t.element_size()
    if nbytes == 0:
        return torch.empty(0, dtype=torch.uint8)
    whole = t.as_strided((nbytes // esize,), (1,), 0)
    if whole.dtype == torch.bool:
        whole = whole.view(torch.uint8)
    return whole.view(torch.uint8).clone()


# ---- serving ------------------------------------------------------------------------------------

def encode_load_reply(ok, error, signature, notes):
    w = Writer()
    w.u8(1 if ok else 0)
    w.str(error)
    w.str(signature)
    w.str(notes)
    return w.bytes()  # device_info: CPU only, the optional field stays absent


def encode_case_reply(rep):
    w = Writer()
    w.u64(rep["case_id"])
    w.u32(rep["code"])
    w.str(rep["message"])
    w.u32(len(rep["calls"]))
    for call in rep["calls"]:
        w.u32(len(call))
        for o in call:
            put_tensor(w, o["tensor"])
            w.str(o["device"])
            w.u32(o["alias_input"])
            w.u32(o["alias_output"])
            w.u8(1 if o["contiguous"] else 0)
            w.u32(o["alias_previous_call"])
    w.u8(1 if rep["inputs_unchanged"] else 0)
    w.f64(rep["kernel_seconds"])
    w.u32(len(rep["aten_ops"]))
    for op in rep["aten_ops"]:
        w.str(op)
    w.u32(len(rep["findings"]))
    for f in rep["findings"]:  # (kind, buffer, index, offset, bytes, buffer_bytes)
        w.u8(f[0])
        w.u8(f[1])
        w.u32(f[2])
        w.i64(f[3])
        w.i64(f[4])
        w.i64(f[5])
    return w.bytes()  # host_copies: CUDA only, the optional section stays absent


def first_line(s):
    s = str(s).strip()
    return s.splitlines()[0] if s else s


def exception_reply(rep, e):
    text = "%s: %s" % (type(e).__name__, first_line(e))
    low = text.lower()
    oom = isinstance(e, MemoryError) or "out of memory" in low or "can't allocate memory" in low \
        or type(e).__name__ == "OutOfMemoryError"
    rep["code"] = CALL_OOM if oom else CALL_EXCEPTION
    rep["message"] = ("out of memory: " if oom else "") + text
    rep["calls"] = []
    return rep


def as_outputs(result):
    if isinstance(result, torch.Tensor):
        return [result]
    if isinstance(result, (tuple, list)) and all(isinstance(t, torch.Tensor) for t in result):
        return list(result)
    raise TypeError("ModelNew returned %s, not a tensor or a tuple of tensors" % type(result).__name__)


class OpRecorder:
    """LoadRequest.record_ops: the ATen operators the module ran (the profiler's CPU events)."""

    def __init__(self, top_level=False):
        self.names = []
        self.top_level = top_level  # only operators called directly, not those they call

    def record(self, fn):
        from torch.autograd import profiler
        with profiler.profile(record_shapes=False) as prof:
            out = fn()
        for ev in prof.function_events:
            if self.top_level and getattr(ev, "cpu_parent", None) is not None:
                continue
            if ev.name.startswith("aten::") and ev.name not in self.names:
                self.names.append(ev.name)
        return out


def run_case(model, req, record_ops):
    rep = {"case_id": req["case_id"], "code": CALL_OK, "message": "", "calls": [], "inputs_unchanged": True,
           "kernel_seconds": 0.0, "aten_ops": [], "findings": []}
    inputs = [a for a in req["args"] if isinstance(a, torch.Tensor)]
    if POISON["byte"] and DEVICE == "cuda":
        try:  # the poisoning is the harness's; its failure must not become the module's error
            sizes = [t.numel() * t.element_size() for t in inputs]
            poison_cuda_cache(POISON["byte"], sum(sizes), max(sizes or [0]))
        except Exception:  # noqa: BLE001
            pass
    before = [storage_bytes_tensor(t) for t in inputs]
    recorder = OpRecorder() if record_ops else None
    previous = []
    seconds = 0.0
    for _ in range(max(1, req["repeat"])):
        t0 = time.perf_counter()
        try:
            with torch.no_grad():
                if recorder:
                    result = recorder.record(lambda: model(*inputs))
                else:
                    result = model(*inputs)
            outs = as_outputs(result)
            if DEVICE != "cpu":
                torch.cuda.synchronize()  # asynchronous errors belong to this call
        except BaseException as e:  # noqa: B902 - nothing may escape the serve loop
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                e = RuntimeError("the module raised %s" % type(e).__name__)
            return exception_reply(rep, e)
        seconds += time.perf_counter() - t0
        call = []
        for i, t in enumerate(outs):
            ai = next((j for j, x in enumerate(inputs) if overlaps(t, x)), -1)
            ao = next((j for j in range(i) if overlaps(t, outs[j])), -1)
            ap = next((j for j, x in enumerate(previous) if overlaps(t, x)), -1)
            call.append({"tensor": t.detach().cpu().contiguous().clone(), "device": str(t.device),
                         "alias_input": ai, "alias_output": ao, "contiguous": t.is_contiguous(),
                         "alias_previous_call": ap})
        rep["calls"].append(call)
        previous = outs
    for j, t in enumerate(inputs):
        now = storage_bytes_tensor(t)
        if now.numel() == before[j].numel() and torch.equal(now, before[j]):
            continue
        rep["inputs_unchanged"] = False
        if now.numel() != before[j].numel():
            rep["findings"].append((2, 0, j, 0, now.numel() - before[j].numel(), before[j].numel()))
            continue
        changed = (now != before[j]).nonzero().reshape(-1)
        rep["findings"].append((2, 0, j, int(changed[0]), int(changed.numel()), before[j].numel()))
    rep["kernel_seconds"] = seconds
    if recorder:
        rep["aten_ops"] = recorder.names
    return rep


def decode_args(r):
    """wire.cpp get_args: u32 count, then (u8 kind, value) per argument."""
    n = r.u32()
    if n > 64:
        raise Truncated("bad argument count")
    args = []
    for _ in range(n):
        kind = r.u8()
        if kind == 0:
            args.append(get_tensor(r))
        elif kind == 1:
            args.append(r.i64())
        elif kind == 2:
            args.append(r.f64())
        elif kind == 3:
            args.append(r.u8() != 0)
        else:
            raise Truncated("bad argument kind")
    return args


def decode_case(payload):
    r = Reader(payload)
    case_id = r.u64()
    args = decode_args(r)
    repeat = r.u32()
    if not r.at_end():
        raise Truncated("trailing bytes after message")
    return {"case_id": case_id, "args": args, "repeat": repeat}


def decode_load(payload):
    r = Reader(payload)
    m = {"so_path": r.str(), "entry": r.str(), "poison_byte": r.u8(), "threads": r.u32(),
         "record_ops": r.u8() != 0, "guard_bytes": r.u32(), "device": "cpu", "build_dir": ""}
    if not r.at_end():
        m["device"] = r.str()
    if not r.at_end():
        m["build_dir"] = r.str()  # the module's own build directory (gauntlet_module_build.py)
    if not r.at_end():
        raise Truncated("trailing bytes after message")
    return m


def split_entry(entry):
    """The Load's entry: the class name, then "|" and a reference module's path when the manifest
    names one ("ModelNew|/runs/level1/23_Softmax.py"): that module supplies Model, get_inputs() and
    get_init_inputs() where the candidate's file lacks them (KernelBench samples define ModelNew only)."""
    if "|" in entry:
        name, ref = entry.split("|", 1)
        return name, ref
    return entry, None


def load_source(path, source, name="gauntlet_module"):
    import types
    mod = types.ModuleType(name)
    mod.__file__ = path
    sys.modules[name] = mod
    exec(compile(source, path, "exec"), mod.__dict__)
    return mod


def pick(mods, name):
    """The first of the modules that defines `name` (None when none does)."""
    for m in mods:
        if m is not None and hasattr(m, name):
            return getattr(m, name)
    return None


def use_flock_baton():
    """torch's cpp_extension serializes load_inline builds of one extension with a FileBaton: a lock
    file created with O_EXCL, removed by its holder when the build ends. A builder killed at the
    gate's limit never removes it, and every later child then waits for it forever (seen on the
    H200: one killed nvcc build turned each later gate of the module into a timeout). The same
    protocol on flock(2) ends with its holder, whatever kills it."""
    try:
        import fcntl
        from torch.utils import file_baton
    except Exception:  # noqa: BLE001 - no cpp_extension, nothing to guard
        return

    def try_acquire(self):
        fd = os.open(self.lock_file_path, os.O_CREAT | os.O_RDWR, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self.fd = fd
        return True

    def wait(self):
        try:
            fd = os.open(self.lock_file_path, os.O_CREAT | os.O_RDWR, 0o666)
        except OSError:
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # the builder's end (or death); then load what it built
        finally:
            os.close(fd)

    def release(self):
        try:
            os.remove(self.lock_file_path)
        except OSError:
            pass
        if getattr(self, "fd", None) is not None:
            os.close(self.fd)
            self.fd = None

    file_baton.FileBaton.try_acquire = try_acquire
    file_baton.FileBaton.wait = wait
    file_baton.FileBaton.release = release


LOADED = {"mods": []}  # the candidate's module and its reference module (the timing baselines' Model)
SECCOMP = {"active": False}  # whether this child installed the seccomp filter (torch.compile needs exec)


def load_module(path, source, entry, ref=None):
    refmod = load_source(ref[0], ref[1], "gauntlet_reference") if ref else None
    mod = load_source(path, source)
    if entry in ("", "forward") and not hasattr(mod, entry or "forward"):
        entry = "ModelNew"  # the command line's default entry ("forward") names no class: KernelBench's
    cls = getattr(mod, entry, None)
    if cls is None:
        raise LookupError("the module defines no '%s'" % entry)
    torch.manual_seed(0)
    init = pick([mod, refmod], "get_init_inputs")
    model = cls(*init()) if callable(init) else cls()
    if hasattr(model, "eval"):
        model = model.eval()
    if DEVICE == "cuda" and hasattr(model, "to"):
        model = model.to("cuda")  # as KernelBench's eval does: ModelNew(*get_init_inputs()).cuda()
    LOADED["mods"] = [mod, refmod]
    return model


# ---- the reference role (docs/modules.md, "Module oracle") ------------------------------------------
#
# Load with entry "reference:<Model>:<ModelNew>" starts this role instead of the candidate's: the
# child builds the reference class with the candidate's weights and answers each Case with the
# reference's outputs computed in float64 (call 0) and, when it runs, the same reference in the
# inputs' own dtype (call 1: the framework's own result, which sizes the tolerance). The parent
# never runs Model in a candidate's child, and never runs module code itself.

REFERENCE_PREFIX = "reference:"
BUILD_PREFIX = "build:"

# Operators that only move, view, allocate or convert data: never "the work" of a module.
PLUMBING = {
    "aten::empty", "aten::empty_like", "aten::empty_strided", "aten::zeros", "aten::zeros_like", "aten::ones",
    "aten::ones_like", "aten::full", "aten::full_like", "aten::new_empty", "aten::new_zeros", "aten::new_ones",
    "aten::new_full", "aten::view", "aten::reshape", "aten::_reshape_alias", "aten::_unsafe_view", "aten::as_strided",
    "aten::expand", "aten::expand_as", "aten::permute", "aten::transpose", "aten::t", "aten::numpy_T",
    "aten::contiguous", "aten::clone", "aten::copy_", "aten::to", "aten::_to_copy", "aten::type_as", "aten::detach",
    "aten::detach_", "aten::alias", "aten::lift", "aten::lift_fresh", "aten::select", "aten::slice", "aten::narrow",
    "aten::unsqueeze", "aten::squeeze", "aten::flatten", "aten::unflatten", "aten::resize_", "aten::result_type",
    "aten::item", "aten::_local_scalar_dense", "aten::unbind", "aten::split", "aten::chunk", "aten::split_with_sizes",
    "aten::flip", "aten::cat", "aten::stack", "aten::fill_", "aten::zero_", "aten::size", "aten::stride",
    "aten::is_nonzero", "aten::dim", "aten::set_", "aten::view_as", "aten::movedim", "aten::swapaxes",
    "aten::resolve_conj", "aten::resolve_neg", "aten::numpy_T",
}
# Pointwise arithmetic and math: the key operators only when a module does nothing else.
POINTWISE = {
    "aten::add", "aten::add_", "aten::sub", "aten::sub_", "aten::rsub", "aten::mul", "aten::mul_", "aten::div",
    "aten::div_", "aten::neg", "aten::reciprocal", "aten::pow", "aten::sqrt", "aten::rsqrt", "aten::exp",
    "aten::log", "aten::abs", "aten::sign", "aten::where", "aten::maximum", "aten::minimum", "aten::gt",
    "aten::lt", "aten::ge", "aten::le", "aten::eq", "aten::ne", "aten::tanh", "aten::sigmoid", "aten::erf",
    "aten::clamp", "aten::clamp_min", "aten::clamp_max", "aten::square", "aten::exp2", "aten::log2",
}


# Operators that do the same work as a key operator by another name (a candidate calling torch.mm
# where Model calls torch.matmul falls back all the same).
SAME_WORK = {
    "aten::matmul": ["aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm", "aten::linear"],
    "aten::linear": ["aten::matmul", "aten::mm", "aten::addmm"],
    "aten::bmm": ["aten::matmul", "aten::baddbmm"],
    "aten::mm": ["aten::matmul", "aten::addmm"],
    "aten::conv2d": ["aten::convolution", "aten::_convolution", "aten::mkldnn_convolution"],
    "aten::softmax": ["aten::_softmax"],
    "aten::log_softmax": ["aten::_log_softmax"],
}


def key_ops(top_level):
    """Model's key operators, from the operators its forward calls directly: those neither plumbing
    nor pointwise (a matmul, a reduction, a convolution) with their same-work aliases, else, for a
    module that only does pointwise math, its pointwise operators."""
    work = [o for o in top_level if o not in PLUMBING]
    heavy = [o for o in work if o not in POINTWISE]
    out = []
    for o in heavy if heavy else work:
        for k in [o] + SAME_WORK.get(o, []):
            if k not in out:
                out.append(k)
    return out


def _dtype_name(dt):
    return str(dt).replace("torch.", "")


def _construct(mods, name):
    cls = pick(mods, name)
    if cls is None:
        raise LookupError("the module defines no '%s'" % name)
    torch.manual_seed(0)  # the candidate's child builds ModelNew after the same seed
    init = pick(mods, "get_init_inputs")
    m = cls(*init()) if callable(init) else cls()
    return m.eval() if hasattr(m, "eval") else m


class Reference:
    def __init__(self, mod, ref_name, cand_name, refmod=None):
        import copy
        self.copy = copy
        # Model, get_inputs() and get_init_inputs() from the reference module when there is one.
        self.mods = [refmod, mod]
        self.model = _construct(self.mods, ref_name)
        self.copied = 0
        self.candidate_note = ""
        # Weights identical to the candidate's: the same seed, then every state entry the two share
        # by name, shape and dtype copied from ModelNew (parameters created in another order, or
        # initialized by hand in ModelNew's constructor, still agree).
        try:
            cand = _construct([mod, refmod], cand_name)
            mine = self.model.state_dict() if hasattr(self.model, "state_dict") else {}
            theirs = cand.state_dict() if hasattr(cand, "state_dict") else {}
            take = {k: v for k, v in theirs.items()
                    if k in mine and tuple(mine[k].shape) == tuple(v.shape) and mine[k].dtype == v.dtype}
            if take:
                mine.update(take)
                self.model.load_state_dict(mine)
            self.copied = len(take)
        except Exception as e:  # the candidate's own child reports its construction failure
            self.candidate_note = "%s could not be built here (%s: %s)" % (cand_name, type(e).__name__, first_line(e))
        self.model64 = copy.deepcopy(self.model).double() if hasattr(self.model, "double") else self.model
        self.lib = {}

    def own_dtype(self):
        for p in list(self.model.parameters()) + list(self.model.buffers()) if hasattr(self.model, "parameters") else []:
            if p.is_floating_point():
                return p.dtype
        return None

    def lib_model(self, dtype):
        """Model in `dtype` (its own weights when it already is): the framework's result."""
        own = self.own_dtype()
        if own is None or own == dtype:
            return self.model
        if dtype not in self.lib:
            self.lib[dtype] = self.copy.deepcopy(self.model).to(dtype)
        return self.lib[dtype]

    def describe(self):
        """get_inputs()' tensors (dtype, shape, value domain), Model's outputs and operators."""
        import json
        torch.manual_seed(0)
        get_inputs = pick(self.mods, "get_inputs")
        if not callable(get_inputs):
            raise LookupError("the module defines no get_inputs(): an unmapped module's shapes come from it")
        inputs = list(get_inputs())
        desc = []
        for i, t in enumerate(inputs):
            if not isinstance(t, torch.Tensor):
                raise TypeError("get_inputs()[%d] is a %s: unmapped modules take tensor inputs only" % (i, type(t).__name__))
            t = t.detach().cpu()
            inputs[i] = t
            if t.dtype not in DTYPES:
                raise TypeError("get_inputs()[%d] has dtype %s, which gauntlet does not generate" % (i, t.dtype))
            d = {"dtype": _dtype_name(t.dtype), "shape": list(t.shape)}
            if t.is_floating_point():
                d["kind"] = "nonnegative" if t.numel() and bool((t >= 0).all()) else "real"
            elif t.dtype == torch.bool:
                d["kind"] = "bool"
            else:
                d["kind"] = "index"
                d["low"] = int(t.min()) if t.numel() else 0
                d["high"] = int(t.max()) + 1 if t.numel() else 1
            desc.append(d)
        rec = OpRecorder(top_level=True)
        with torch.no_grad():
            outs = as_outputs(rec.record(lambda: self.model(*inputs)))
            as_outputs(self.model64(*[t.double() if t.is_floating_point() else t for t in inputs]))
        return json.dumps({"inputs": desc,
                           "outputs": [{"dtype": _dtype_name(o.dtype), "shape": list(o.shape)} for o in outs],
                           "ops": rec.names, "key_ops": key_ops(rec.names), "copied_state": self.copied,
                           "candidate_note": self.candidate_note})

    def run(self, req):
        rep = {"case_id": req["case_id"], "code": CALL_OK, "message": "", "calls": [], "inputs_unchanged": True,
               "kernel_seconds": 0.0, "aten_ops": [], "findings": []}
        inputs = [a for a in req["args"] if isinstance(a, torch.Tensor)]

        def plain(outs):
            return [{"tensor": t.detach().cpu().contiguous().clone(), "device": "cpu", "alias_input": -1,
                     "alias_output": -1, "contiguous": True, "alias_previous_call": -1} for t in outs]
        try:
            with torch.no_grad():
                wide = [t.double() if t.is_floating_point() else t for t in inputs]
                rep["calls"].append(plain(as_outputs(self.model64(*wide))))
        except BaseException as e:  # noqa: B902
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                e = RuntimeError("the reference raised %s" % type(e).__name__)
            return exception_reply(rep, e)
        floating = [t.dtype for t in inputs if t.is_floating_point()]
        if floating:
            try:
                with torch.no_grad():
                    rep["calls"].append(plain(as_outputs(self.lib_model(floating[0])(*[t.clone() for t in inputs]))))
            except Exception:  # noqa: B902 - without it the tolerance falls back to its floor
                pass
        return rep


# ---- timing: the Time and Peaks frames (src/worker/timing_loop.cpp, library_baseline.cpp) ---------
#
# A TimeRequest is answered exactly as the native worker answers it (include/gauntlet/timing.h):
# the candidate once per input set, untimed (the outputs the parent verifies); the baseline's
# availability; warm-up, which sizes the timed loop to the budget; then candidate and baseline
# interleaved (alternating which goes first), rotating over the sets, each timed call's outputs
# compared bitwise (NaN payloads aside) with its set's verified ones. CUDA: a scratch buffer zeroed
# before every timed call (L2 flush), CUDA events on the current stream, the whole device
# synchronized after the end event. CPU: the steady clock (time.perf_counter), `threads` threads.
#
# Baselines (the request's baseline_op): "module:eager" (the module's reference class Model, built
# as the module oracle builds it: get_init_inputs(), seed 0, the candidate's shared weights, in the
# inputs' dtype, on the module's device), "module:compiled" (torch.compile of that Model, where
# torch has it and the child may run its compiler), or an op name (the library op, as the native
# worker's library_baseline.cpp writes it, from the case's full argument list).

MAX_SAMPLES = 1 << 20


def decode_time(payload):
    r = Reader(payload)
    n = r.u32()
    if n == 0 or n > 64:
        raise Truncated("bad input-set count")
    sets = [decode_args(r) for _ in range(n)]
    m = {"sets": sets}
    m["baseline_op"] = r.str()
    m["warmup"] = r.u32()
    m["min_iterations"] = r.u32()
    m["max_iterations"] = r.u32()
    m["budget_seconds"] = r.f64()
    m["flush_bytes"] = r.u64()
    threads = r.u32()
    m["threads"] = threads - (1 << 32) if threads >= (1 << 31) else threads
    if m["min_iterations"] == 0 or m["min_iterations"] > m["max_iterations"] or m["max_iterations"] > MAX_SAMPLES:
        raise Truncated("bad iteration bounds")
    if not r.at_end():
        raise Truncated("trailing bytes after message")
    return m


def _put_tensors(w, ts):
    w.u32(len(ts))
    for t in ts:
        put_tensor(w, t)


def _put_samples(w, v):
    w.u32(len(v))
    for d in v:
        w.f64(float(d))


def new_time_reply(cuda):
    return {"code": CALL_OK, "message": "", "timer": "cuda-events" if cuda else "steady-clock", "device": "",
            "l2_bytes": 0, "verified": [], "candidate_ms": [], "baseline_ms": [], "baseline_error": "",
            "iterations": 0, "mismatches": 0, "first_mismatch_set": -1, "first_mismatch_call": 0,
            "mismatch_outputs": []}


def encode_time_reply(rep):
    """timing_wire.cpp encode(TimeReply)."""
    w = Writer()
    w.u32(rep["code"])
    w.str(rep["message"])
    w.str(rep["timer"])
    w.str(rep["device"])
    w.i64(int(rep["l2_bytes"]))
    w.u32(len(rep["verified"]))
    for outs in rep["verified"]:
        _put_tensors(w, outs)
    _put_samples(w, rep["candidate_ms"])
    _put_samples(w, rep["baseline_ms"])
    w.str(rep["baseline_error"])
    w.u32(rep["iterations"])
    w.u32(rep["mismatches"])
    w.u32(rep["first_mismatch_set"])  # -1 goes as 0xFFFFFFFF, as the native cast does
    w.u32(rep["first_mismatch_call"])
    _put_tensors(w, rep["mismatch_outputs"])
    return w.bytes()


def encode_peaks(p):
    """timing_wire.cpp encode(DevicePeaks)."""
    w = Writer()
    w.str(p["device"])
    for k in ("copy_bytes_per_s", "matmul_flops_f32", "matmul_flops_f16", "matmul_flops_bf16"):
        w.f64(float(p[k]))
    w.str(p["how"])
    return w.bytes()


def same_bits(a, b):
    """timing_loop.cpp same_bits: equal shapes, dtypes, devices and values, NaN where NaN."""
    if tuple(a.shape) != tuple(b.shape) or a.dtype != b.dtype or a.device != b.device:
        return False
    if a.numel() == 0:
        return True
    ac, bc = a.contiguous(), b.contiguous()
    if torch.equal(ac, bc):
        return True
    if not ac.is_floating_point():
        return False
    an, bn = ac.isnan(), bc.isnan()
    return torch.equal(an, bn) and torch.equal(ac.masked_fill(an, 0), bc.masked_fill(bn, 0))


class Timer:
    """CUDA events on the current stream (the whole device synchronized after the end event), or
    the steady clock on the CPU; milliseconds."""

    def __init__(self, cuda):
        self.cuda = cuda
        self.t0 = 0.0
        if cuda:
            self.start_ev = torch.cuda.Event(enable_timing=True)
            self.end_ev = torch.cuda.Event(enable_timing=True)

    def start(self):
        if self.cuda:
            self.start_ev.record()
        else:
            self.t0 = time.perf_counter()

    def stop(self):
        if not self.cuda:
            return (time.perf_counter() - self.t0) * 1000.0
        self.end_ev.record()
        torch.cuda.synchronize()
        return float(self.start_ev.elapsed_time(self.end_ev))


def _tensor_args(args):
    return [a for a in args if isinstance(a, torch.Tensor)]


def _library_baselines():
    """library_baseline.cpp's table: one expression per op, the schema's argument order
    (opschemas/<op>.json: inputs, then attributes)."""
    import math
    F = torch.nn.functional

    def attention(q, k, v, causal):
        if hasattr(F, "scaled_dot_product_attention"):
            return F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
        s = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(float(q.size(-1)))
        if causal:
            mask = torch.ones(q.size(-2), k.size(-2), dtype=torch.bool, device=q.device).triu(1)
            s = s.masked_fill(mask, float("-inf"))
        return torch.matmul(torch.softmax(s, -1), v)

    def rms_norm(a):
        x = a[0]
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + a[2]) * a[1]

    return {
        "add": lambda a: a[0] + a[1],
        "amax": lambda a: a[0].amax(dim=[a[1]]),
        "bmm": lambda a: torch.bmm(a[0], a[1]),
        "clamp": lambda a: torch.clamp(a[0], a[1], a[2]),
        "conv2d": lambda a: F.conv2d(a[0], a[1], a[2], (a[3], a[3]), (a[4], a[4])),
        "cross_entropy": lambda a: F.nll_loss(torch.log_softmax(a[0], 1), a[1]),
        "cumsum": lambda a: torch.cumsum(a[0], a[1]),
        "embedding": lambda a: torch.embedding(a[0], a[1]),
        "gelu": lambda a: F.gelu(a[0]),
        "layer_norm": lambda a: F.layer_norm(a[0], (a[0].size(-1),), a[1], a[2], a[3]),
        "linear_relu": lambda a: torch.relu(F.linear(a[0], a[1], a[2])),
        "log_softmax": lambda a: torch.log_softmax(a[0], a[1]),
        "logsumexp": lambda a: torch.logsumexp(a[0], [a[1]]),
        "matmul": lambda a: torch.mm(a[0], a[1]),
        "mean": lambda a: a[0].mean([a[1]]),
        "relu": lambda a: torch.relu(a[0]),
        "rms_norm": rms_norm,
        "sdpa": lambda a: attention(a[0], a[1], a[2], a[3]),
        "sigmoid": lambda a: torch.sigmoid(a[0]),
        "softmax": lambda a: torch.softmax(a[0], a[1]),
        "sum": lambda a: a[0].sum([a[1]]),
    }


EAGER, COMPILED = "module:eager", "module:compiled"


def compiled_baseline_unavailable():
    """Why this child cannot time torch.compile(Model), or "" when it can try. The LoadReply's
    signature carries it (a line "no-compiled-baseline: ..."), so the gate starts no child of its
    own for that baseline in vain."""
    if not hasattr(torch, "compile"):
        return "torch %s has no torch.compile (it came with torch 2.0): no compiled baseline" % torch.__version__
    if DEVICE == "cpu" and SECCOMP["active"]:
        return ("torch.compile's Inductor builds C++ with a compiler it runs as a child process on the CPU, which "
                "the CPU child's seccomp filter forbids (no exec): no compiled baseline for CPU modules")
    return ""


class NoBaseline(Exception):
    """A baseline that does not exist here, with the reason (baseline_error), never a failure."""


class Baselines:
    """The timing baselines of a module, built on first use (see the section's comment)."""

    def __init__(self, candidate):
        self.candidate = candidate
        self.built = {}

    def _model(self, args):
        mods = LOADED["mods"] or [None, None]
        order = [mods[1], mods[0]]  # Model and get_init_inputs(): the reference module's first
        cls = pick(order, "Model")
        if cls is None:
            raise NoBaseline("the module defines no 'Model' (the eager baseline is the reference class)")
        torch.manual_seed(0)
        init = pick(order, "get_init_inputs")
        m = cls(*init()) if callable(init) else cls()
        # The candidate's weights where the two share a state entry (as the module oracle does).
        if hasattr(m, "state_dict") and hasattr(self.candidate, "state_dict"):
            mine, theirs = m.state_dict(), self.candidate.state_dict()
            take = {k: v.detach().to("cpu") for k, v in theirs.items()
                    if k in mine and tuple(mine[k].shape) == tuple(v.shape) and mine[k].dtype == v.dtype}
            if take:
                mine.update(take)
                m.load_state_dict(mine)
        floating = [t.dtype for t in _tensor_args(args) if t.is_floating_point()]
        if hasattr(m, "to"):
            own = [p.dtype for p in list(m.parameters()) + list(m.buffers()) if p.is_floating_point()] \
                if hasattr(m, "parameters") else []
            if floating and own and own[0] != floating[0]:
                m = m.to(floating[0])  # the framework's Model in the inputs' dtype
            m = m.to(DEVICE)
        return m.eval() if hasattr(m, "eval") else m

    def _build(self, op, args):
        if op == EAGER:
            m = self._model(args)
            return lambda a: as_outputs(m(*_tensor_args(a)))
        if op == COMPILED:
            why = compiled_baseline_unavailable()
            if why:
                raise NoBaseline(why)
            try:
                import torch._inductor.config as inductor_config
                inductor_config.compile_threads = 1  # no pool of compile worker processes
            except Exception:  # noqa: BLE001
                pass
            cm = torch.compile(self._model(args))
            return lambda a: as_outputs(cm(*_tensor_args(a)))
        table = _library_baselines()
        if op not in table:
            raise NoBaseline("no library baseline for op %s" % op)
        fn = table[op]
        return lambda a: as_outputs(fn(a))

    def callee(self, op, args):
        if op not in self.built:
            self.built[op] = self._build(op, args)
        return self.built[op]


def _call(fn, args, sync):
    """(outputs, code, message) of one call under no_grad; sync: wait for the device (CUDA)."""
    try:
        with torch.no_grad():
            outs = fn(args)
        if sync:
            torch.cuda.synchronize()  # an asynchronous fault belongs to this call
        return outs, CALL_OK, ""
    except BaseException as e:  # noqa: B902 - nothing may escape the serve loop
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            e = RuntimeError("the module raised %s" % type(e).__name__)
        r = exception_reply({}, e)
        return None, r["code"], r["message"]


def keep_heap():
    """CPU: glibc's malloc keeps freed memory instead of returning it to the kernel. Otherwise the
    megabyte-sized temporaries of a module's eager calls are mmapped and unmapped, or the heap
    trimmed, on every call, and the timed loop measures page faults: measured on the softmax
    module at [8, 32, 1000], 1.1 ms per call with glibc's defaults, 0.24 ms with the heap kept
    (eager Model 0.5 vs 0.21 ms); which state a child landed in varied from run to run."""
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
    try:
        _libc.mallopt(M_MMAP_THRESHOLD, 32 << 20)   # the largest glibc takes on 64-bit
        _libc.mallopt(M_TRIM_THRESHOLD, 512 << 20)
    except (AttributeError, OSError):  # not glibc
        pass


# ---- the memory gate's poisoned children (gates/memory.cpp) ------------------------------------------
#
# A Load with a nonzero poison byte asks for every new buffer to start out holding that byte, so
# that two children poisoned differently give different outputs where a module reads memory it
# never wrote. The native worker swaps LibTorch's allocator for a poisoning one; a Python child
# cannot, so it poisons below and around torch's allocators: on the CPU, glibc's M_PERTURB fills
# every block malloc hands out (the children run without glibc's per-thread cache, which would
# bypass it; blocks above 32 MB are mmapped, zeroed, and not poisoned); on a GPU, the CUDA caching
# allocator's free memory is filled before each call, as the native worker does (device_poison.cpp).

POISON = {"byte": 0}


def poison_heap(byte):
    """CPU: new heap blocks hold `byte`. The note for the sandbox notes, "" when glibc refused."""
    M_PERTURB, M_MMAP_THRESHOLD = -6, -3
    if byte == 0xFF:  # glibc fills with value^0xFF and is off at 0: 0xFF cannot be asked for
        return ""
    try:
        _libc.mallopt(M_MMAP_THRESHOLD, 32 << 20)  # the largest glibc takes on 64-bit
        if _libc.mallopt(M_PERTURB, byte ^ 0xFF) != 1:  # allocations get the complement of the value
            return ""
    except (AttributeError, OSError):  # not glibc
        return ""
    return " heap-poison(0x%02x, glibc M_PERTURB, blocks up to 32 MB)" % byte


MIB = 1 << 20


def poison_cuda_cache(byte, input_bytes, largest_input_bytes):
    """GPU: the caching allocator's free memory holds `byte` (the native worker's sizes: 16 MiB of
    small-pool blocks, a block for the largest input, 20 MiB large-pool blocks up to 4x the inputs)."""
    try:
        torch.cuda.empty_cache()  # segments with no live block go back: what is cached is ours
    except Exception:  # noqa: BLE001
        pass
    want = min(4 << 30, 4 * max(input_bytes, 0) + 16 * MIB)
    held = []
    try:
        for _ in range(16):
            held.append(torch.empty(MIB, dtype=torch.uint8, device="cuda"))
        big = (4 * largest_input_bytes + 2 * MIB - 1) // (2 * MIB) * (2 * MIB)
        if 20 * MIB < big <= (4 << 30):
            held.append(torch.empty(big, dtype=torch.uint8, device="cuda"))
        for _ in range(0, max(want - 16 * MIB, 20 * MIB), 20 * MIB):
            held.append(torch.empty(20 * MIB, dtype=torch.uint8, device="cuda"))
    except Exception:  # noqa: BLE001 - out of device memory: poison what was obtained
        pass
    try:
        for t in held:
            t.fill_(byte)
    except Exception:  # noqa: BLE001 - a device fault shows in the call that follows
        pass
    del held  # back to the cache; later allocations on this stream are ordered after the fills


def run_timing(model, req, baselines):
    """timing_loop.cpp run_timing, for a module (candidate: model(*tensor arguments)); no autograd."""
    with torch.no_grad():
        return _run_timing(model, req, baselines)


def _run_timing(model, req, baselines):
    cuda = DEVICE == "cuda"
    rep = new_time_reply(cuda)

    def failed(code, message):
        rep["code"] = code
        rep["message"] = message
        return rep

    try:
        if not cuda:
            torch.set_num_threads(max(1, req["threads"]))
            keep_heap()
        sets = req["sets"]
        timer = Timer(cuda)
        if cuda:
            try:
                rep["device"] = torch.cuda.get_device_name()
                props = torch.cuda.get_device_properties(torch.cuda.current_device())
                rep["l2_bytes"] = int(getattr(props, "L2_cache_size", 0) or 0)
            except Exception:  # noqa: BLE001 - the name is for the report only
                pass
        flush = None
        if cuda and req["flush_bytes"] > 0:
            flush = torch.empty(req["flush_bytes"], dtype=torch.uint8, device="cuda")

        def candidate(args):
            return as_outputs(model(*_tensor_args(args)))

        # Untimed first calls: the outputs the parent verifies, and the baseline's availability.
        verified = []
        t_first = time.perf_counter()
        for args in sets:
            outs, code, message = _call(candidate, args, cuda)
            if code != CALL_OK:
                return failed(code, message)
            outs = [t.clone() for t in outs]  # the module may hand out a reused buffer
            verified.append(outs)
            rep["verified"].append([t.detach().cpu().contiguous() for t in outs])
        first_seconds = (time.perf_counter() - t_first) / len(sets)
        op = req["baseline_op"]
        have = bool(op)
        base = None
        if not have:
            rep["baseline_error"] = "no baseline requested"
        else:
            try:
                base = baselines.callee(op, sets[0])
            except NoBaseline as e:
                have = False
                rep["baseline_error"] = str(e)
            except BaseException as e:  # noqa: B902
                have = False
                rep["baseline_error"] = "the baseline %s could not be built: %s: %s" % (op, type(e).__name__,
                                                                                     first_line(e))
            if have:
                _, code, message = _call(base, sets[0], cuda)
                if code != CALL_OK:
                    have = False
                    rep["baseline_error"] = "the baseline %s threw: %s" % (op, message)
        # Warm-up, which also estimates a call's cost so the timed loop fits the budget.
        warm = 0.0
        for w in range(req["warmup"]):
            for who in ("candidate", "baseline"):
                if who == "baseline" and not have:
                    continue
                t0 = time.perf_counter()
                _, code, message = _call(candidate if who == "candidate" else base, sets[w % len(sets)], cuda)
                warm += time.perf_counter() - t0
                if code != CALL_OK:
                    if who == "candidate":
                        return failed(code, message)
                    have = False
                    rep["baseline_error"] = "the baseline %s threw: %s" % (op, message)
        per_round = max(1e-6, warm / req["warmup"] if req["warmup"] > 0 else 2 * first_seconds)
        iterations = int(min(max(req["budget_seconds"] / per_round, req["min_iterations"]), req["max_iterations"]))
        rep["iterations"] = iterations

        for i in range(iterations):
            s = i % len(sets)
            # Alternate which goes first, so neither always runs right after the other.
            for who in (("candidate", "baseline") if i % 2 == 0 else ("baseline", "candidate")):
                if who == "baseline" and not have:
                    continue
                fn = candidate if who == "candidate" else base
                if flush is not None:
                    flush.zero_()  # on the current stream, before the start event
                code, message, outs = CALL_OK, "", None
                timer.start()
                try:
                    outs = fn(sets[s])  # grad mode is off for the whole request (run_timing)
                except BaseException as e:  # noqa: B902
                    if isinstance(e, (KeyboardInterrupt, SystemExit)):
                        e = RuntimeError("the module raised %s" % type(e).__name__)
                    r = exception_reply({}, e)
                    code, message = r["code"], r["message"]
                try:
                    ms = timer.stop()
                except Exception as e:  # noqa: BLE001 - an asynchronous fault of the call
                    ms = 0.0
                    if code == CALL_OK:
                        code, message = CALL_EXCEPTION, "CUDA error after the call: %s" % first_line(e)
                if code != CALL_OK:
                    if who == "candidate":
                        return failed(code, message)
                    have = False
                    rep["baseline_error"] = "the baseline %s threw: %s" % (op, message)
                    rep["baseline_ms"] = []
                    continue
                if who == "baseline":
                    rep["baseline_ms"].append(ms)
                    continue
                rep["candidate_ms"].append(ms)
                same = len(outs) == len(verified[s]) and all(same_bits(o, v) for o, v in zip(outs, verified[s]))
                if not same:
                    if rep["mismatches"] == 0:
                        rep["first_mismatch_set"] = s
                        rep["first_mismatch_call"] = i
                        rep["mismatch_outputs"] = [o.detach().cpu().contiguous() for o in outs]
                    rep["mismatches"] += 1
    except Exception as e:  # noqa: BLE001
        rep["code"] = WORKER_INTERNAL_ERROR
        rep["message"] = "worker error while timing: %s: %s" % (type(e).__name__, first_line(e))
    return rep


def _best_seconds(cuda, reps, fn):
    timer = Timer(cuda)
    best = 1e30
    for _ in range(reps):
        timer.start()
        fn()
        best = min(best, timer.stop() / 1000.0)
    return best


def measure_peaks():
    """timing_loop.cpp measure_peaks, with torch: the copy rate and the matmul rates of the device."""
    cuda = DEVICE == "cuda"
    p = {"device": "", "copy_bytes_per_s": 0.0, "matmul_flops_f32": 0.0, "matmul_flops_f16": 0.0,
         "matmul_flops_bf16": 0.0, "how": ""}
    try:
        dev = "cuda" if cuda else "cpu"
        # A CPU's name is the parent's to give (it keys the cache with it); the GPU's only the child sees.
        if cuda:
            try:
                p["device"] = torch.cuda.get_device_name()
            except Exception:  # noqa: BLE001
                p["device"] = "CUDA device"
        # Copy rate: GPU 1 GiB (far past the L2, which the gate flushes before every call); CPU the
        # cache-resident rate of a 256 KiB copy, in batches of 10 so Python's per-call overhead
        # (a few microseconds, as long as the copy itself) does not lower it.
        copy_bytes = (1 << 30) if cuda else (1 << 18)
        src = torch.empty(copy_bytes, dtype=torch.uint8, device=dev).fill_(1)
        dst = torch.empty(copy_bytes, dtype=torch.uint8, device=dev)
        if cuda:
            s = _best_seconds(True, 5, lambda: dst.copy_(src))
        else:
            batch = 10

            def copies():
                for _ in range(batch):
                    dst.copy_(src)
            s = _best_seconds(False, 200, copies) / batch
        if s > 0:
            p["copy_bytes_per_s"] = 2.0 * copy_bytes / s
        del src, dst

        def rate(dtype, n):
            a = torch.randn(n, n, dtype=dtype, device=dev)
            b = torch.randn(n, n, dtype=dtype, device=dev)
            c = torch.mm(a, b)  # warm-up (library handles, kernel selection)
            t = _best_seconds(cuda, 5, lambda: torch.mm(a, b, out=c))
            return 2.0 * n * n * n / t if t > 0 else 0.0

        if cuda:
            # A float32 kernel may use TF32 tensor cores: its floor is the TF32 rate.
            tf32 = torch.backends.cuda.matmul.allow_tf32
            torch.backends.cuda.matmul.allow_tf32 = True
            try:
                p["matmul_flops_f32"] = rate(torch.float32, 8192)
            finally:
                torch.backends.cuda.matmul.allow_tf32 = tf32
            p["matmul_flops_f16"] = rate(torch.float16, 8192)
            p["matmul_flops_bf16"] = rate(torch.bfloat16, 8192)
            p["how"] = ("device copy of 1 GiB; torch.mm 8192^3 (float32 with TF32 allowed), best of 5, CUDA events "
                        "(Python worker)")
        else:
            # Nominal, as the native worker: every thread at 5 GHz retiring two 16-wide float32 FMAs a
            # cycle (AVX-512), 16 times that for float16/bfloat16 (AMX).
            f32 = float(torch.get_num_threads()) * 5e9 * 64
            p["matmul_flops_f32"] = f32
            p["matmul_flops_f16"] = p["matmul_flops_bf16"] = 16 * f32
            p["how"] = ("cache-resident memory copy of 256 KiB, best of 200 batches of 10 copies, steady clock "
                        "(Python worker); matmul: nominal ceiling threads x 5 GHz x 64 float32 flop/cycle (x16 for "
                        "float16/bfloat16)")
    except Exception as e:  # noqa: BLE001
        p["how"] += " (measurement failed: %s: %s)" % (type(e).__name__, first_line(e))
    return p


def serve_timing(model, ftype, payload, baselines):
    """(reply type, body) for a Time or Peaks frame."""
    if ftype == T_PEAKS:
        return T_PEAKS_REPLY, encode_peaks(measure_peaks())
    try:
        req = decode_time(payload)
    except Exception as e:  # noqa: BLE001
        rep = new_time_reply(DEVICE == "cuda")
        rep["code"] = WORKER_INTERNAL_ERROR
        rep["message"] = "worker could not decode the timing request: %s" % e
        return T_TIME_REPLY, encode_time_reply(rep)
    if model is None:
        rep = new_time_reply(DEVICE == "cuda")
        rep["code"] = WORKER_INTERNAL_ERROR
        rep["message"] = "harness: the module oracle's reference child does not time"
        return T_TIME_REPLY, encode_time_reply(rep)
    rep = run_timing(model, req, baselines)
    try:
        return T_TIME_REPLY, encode_time_reply(rep)
    except Exception as e:  # noqa: BLE001
        bad = new_time_reply(DEVICE == "cuda")
        bad["code"] = WORKER_INTERNAL_ERROR
        bad["message"] = "worker error encoding the timing reply: %s" % e
        return T_TIME_REPLY, encode_time_reply(bad)


def serve(policy):
    global torch
    frame = read_frame(REQUEST_FD)
    if frame is None or frame[0] != T_LOAD:
        return 3
    try:
        load = decode_load(frame[1])
    except Exception as e:
        write_frame(REPLY_FD, T_LOAD_REPLY, encode_load_reply(False, "harness: %s" % e, "", ""))
        return 3
    if load["device"] not in ("cpu", "cuda"):
        write_frame(REPLY_FD, T_LOAD_REPLY,
                    encode_load_reply(False, "harness: unknown device %s" % load["device"], "", ""))
        return 3
    # The modules' sources are read before /tmp is replaced and privileges are dropped.
    load["entry"], ref_path = split_entry(load["entry"])
    # "build:<entry>": this child is the module's build step (gauntlet_module_build.py), the one
    # child that may run compilers and write (into the module's build directory only).
    building = load["entry"].startswith(BUILD_PREFIX)
    if building:
        load["entry"] = load["entry"][len(BUILD_PREFIX):]
    build_dir = load["build_dir"]
    prebuilt = None
    ref = None
    try:
        with open(load["so_path"], "r", encoding="utf-8") as f:
            source = f.read()
        if ref_path:
            with open(ref_path, "r", encoding="utf-8") as f:
                ref = (ref_path, f.read())
    except OSError as e:
        write_frame(REPLY_FD, T_LOAD_REPLY, encode_load_reply(False, "cannot read the module %s: %s"
                                                              % (e.filename or load["so_path"], e), "", ""))
        return 4
    try:
        import torch as _torch
    except Exception as e:
        write_frame(REPLY_FD, T_LOAD_REPLY, encode_load_reply(
            False, "harness: the Python worker cannot import torch (%s: %s; install python3-torch or set "
            "GAUNTLET_PYTHON to an interpreter that has it)" % (type(e).__name__, first_line(e)), "", ""))
        return 3
    torch = _torch
    _init_dtypes()
    fast = load_fast_checksum()
    torch.set_num_threads(max(1, load["threads"]))
    global DEVICE
    if load["device"] == "cuda" and not load["entry"].startswith(REFERENCE_PREFIX) and not building:
        DEVICE = "cuda"
    if DEVICE == "cuda" or building:
        # load_inline runs ninja and nvcc, Triton ptxas: the scrubbed PATH (/usr/bin:/bin) must
        # also reach this interpreter's scripts (pip's ninja), /usr/local and the CUDA toolkit.
        extra = [os.path.dirname(sys.executable), "/usr/local/bin", "/usr/local/cuda/bin"]
        try:
            import ninja  # the pip package keeps its binary beside itself
            extra.insert(0, ninja.BIN_DIR)
        except Exception:  # noqa: BLE001
            pass
        path = os.environ.get("PATH", "/usr/bin:/bin").split(":")
        os.environ["PATH"] = ":".join([d for d in extra if d not in path] + path)
    # Compiler caches: the module's own build directory while building, else this child's private
    # /tmp; never a directory shared between modules (an extension's name is no key: dozens of
    # KernelBench solutions call theirs "matmul_cuda").
    os.environ.update(gauntlet_module_build.cache_env(build_dir, building))
    if build_dir and not building:
        try:
            prebuilt = gauntlet_module_build.Prebuilt(build_dir, may_compile=DEVICE == "cuda")
        except (OSError, ValueError) as e:
            write_frame(REPLY_FD, T_LOAD_REPLY, encode_load_reply(
                False, "harness: the module's build record is unreadable (%s)" % e, "", ""))
            return 3
    recorder = gauntlet_module_build.Recorder(build_dir) if building else None
    # Importing torch.utils.cpp_extension (which the hooks do) runs `which` for its CUDA and ROCm
    # homes: an exec a CPU child's filter kills, so a CPU child imports it before its sandbox. A
    # toolchain child (CUDA, or building) imports it after: on torch 2.11 the import asks CUDA for
    # its devices, and a CUDA start before /proc is remounted fails for good (error 304, seen on
    # the H200 in every CUDA child).
    toolchain = building or DEVICE != "cpu"
    hooks = recorder or prebuilt
    if hooks is not None and not toolchain:
        hooks.install()
    use_flock_baton()
    # A CUDA module's build child gets the CUDA child's sandbox: torch's load_inline asks the GPU
    # for its compute capability (the -gencode flags) unless TORCH_CUDA_ARCH_LIST says it.
    # The filesystem read-only but the private /tmp, the module's build directory bound back:
    # writable for its build child only.
    notes, error = enter_sandbox(policy, load["device"] if building else DEVICE, toolchain=toolchain,
                                 build_dirs=[build_dir] if build_dir else [], build_writable=building)
    if error:
        write_frame(REPLY_FD, T_LOAD_REPLY, encode_load_reply(False, "harness: sandbox setup failed: " + error, "", ""))
        return 3
    if hooks is not None and toolchain:
        hooks.install()
    if building:
        notes += " module-build(%s)" % build_dir
    elif prebuilt is not None:
        gauntlet_module_build.seed_private_caches(build_dir)
        notes += " prebuilt-extensions(%d)" % len(prebuilt.record.get("extensions", []))
    poisoned = ""
    if load["poison_byte"] and not load["entry"].startswith(REFERENCE_PREFIX):
        POISON["byte"] = load["poison_byte"]
        poisoned = poison_heap(POISON["byte"]) if DEVICE == "cpu" else \
            " cuda-cache-poison(0x%02x, before each call)" % POISON["byte"]
    notes += " python-worker(%s%s)%s" % ("no canaries" if poisoned else "no poison allocator, no canaries",
                                         "" if fast else ", pure-Python checksum", poisoned)
    reference = None
    try:
        if load["entry"].startswith(REFERENCE_PREFIX):
            names = load["entry"][len(REFERENCE_PREFIX):].split(":")
            refmod = load_source(ref[0], ref[1], "gauntlet_reference") if ref else None
            mod = load_source(load["so_path"], source)
            reference = Reference(mod, names[0] or "Model", names[1] if len(names) > 1 and names[1] else "ModelNew",
                                  refmod)
            model = None
            signature = reference.describe()
        elif building:
            model = load_module(load["so_path"], source, load["entry"] or "ModelNew", ref)
            write_frame(REPLY_FD, T_LOAD_REPLY, encode_load_reply(True, "", recorder.reply(), notes))
            return 0
        else:
            model = load_module(load["so_path"], source, load["entry"] or "ModelNew", ref)
            signature = "python:%s" % (load["entry"] or "ModelNew")
            why = compiled_baseline_unavailable()
            if why:
                signature += "\nno-compiled-baseline: " + why
    except BaseException as e:  # noqa: B902
        tb = traceback.extract_tb(e.__traceback__)
        where = ""
        for fr in tb:
            if fr.filename in (load["so_path"], ref_path):
                where = " (line %d)" % fr.lineno
        if building and recorder.failed:
            # One build-error with the compiler's first lines (the parent splits them off); a
            # failure that is not the module's is the harness's ("harness:").
            head = {"compile": "build failed", "call": "build call failed"}.get(recorder.failed_kind,
                                                                              "harness: the build step failed")
            write_frame(REPLY_FD, T_LOAD_REPLY, encode_load_reply(
                False, "%s%s: %s\n%s" % (head, where, first_line(recorder.failed),
                                         gauntlet_module_build.error_lines(recorder.failed)), "", notes))
            return 5
        write_frame(REPLY_FD, T_LOAD_REPLY, encode_load_reply(
            False, "loading the Python module failed%s: %s: %s" % (where, type(e).__name__, first_line(e)), "", notes))
        return 4
    if DEVICE == "cuda":
        # Torch's CUDA start and a copy each way while loading: the parent gives a child its GPU
        # turn per request (src/parent/file_lock.cpp), so this overlaps other children's work.
        # An unusable GPU shows in the first case, where it is categorized.
        try:
            torch.zeros(256, device="cuda").cpu()
            torch.cuda.synchronize()
        except Exception:  # noqa: BLE001
            pass
    write_frame(REPLY_FD, T_LOAD_REPLY, encode_load_reply(True, "", signature, notes))

    baselines = None  # the timing baselines, built at the first Time frame
    while True:
        frame = read_frame(REQUEST_FD)
        if frame is None or frame[0] == T_BYE:
            return 0
        ftype, payload = frame
        if ftype in (T_TIME, T_PEAKS):
            if baselines is None and model is not None:
                baselines = Baselines(model)
            rtype, body = serve_timing(model, ftype, payload, baselines)
            write_frame(REPLY_FD, rtype, body)
            continue
        if ftype != T_CASE:
            return 3
        try:
            req = decode_case(payload)
        except Exception as e:
            rep = {"case_id": 0, "code": WORKER_INTERNAL_ERROR, "message": "worker could not decode the case: %s" % e,
                   "calls": [], "inputs_unchanged": True, "kernel_seconds": 0.0, "aten_ops": [], "findings": []}
        else:
            try:
                rep = reference.run(req) if reference else run_case(model, req, load["record_ops"])
            except BaseException as e:  # noqa: B902
                rep = {"case_id": req["case_id"], "code": WORKER_INTERNAL_ERROR,
                       "message": "worker error: %s: %s" % (type(e).__name__, first_line(e)), "calls": [],
                       "inputs_unchanged": True, "kernel_seconds": 0.0, "aten_ops": [], "findings": []}
        try:
            body = encode_case_reply(rep)
        except BaseException as e:  # noqa: B902
            body = encode_case_reply({"case_id": rep["case_id"], "code": WORKER_INTERNAL_ERROR,
                                      "message": "worker error encoding the reply: %s" % e, "calls": [],
                                      "inputs_unchanged": True, "kernel_seconds": 0.0, "aten_ops": [],
                                      "findings": []})
        write_frame(REPLY_FD, T_CASE_REPLY, body)


# ---- the zygote (`--zygote`): torch imported once, one sandboxed child per gate ------------------
#
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
        pid = _libc.syscall(SYS_CLONE, ctypes.c_ulong(_clone_flags(bits) | CLONE_PARENT | int(signal.SIGCHLD)),
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
    global torch
    import signal
    import socket
    import struct as _struct
    # Ctrl-C is gauntlet's to handle (it kills the zygote and its children): no KeyboardInterrupt
    # traceback from here or from a forked child, whatever the process group.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
    import torch as _torch
    torch = _torch
    _init_dtypes()
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
    torch.set_num_threads(1)
    a = torch.ones(4, 4)
    _ = (a.t().contiguous() + a).to(torch.float16).to(torch.bfloat16).double().sum().item()
    _libc.prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0)
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
        pid, achieved, err = -1, 0, errno.EINVAL
        try:
            r = Reader(msg)
            wanted = r.u32()
            policy = decode_policy(r.str())
        except Exception:  # noqa: B902 - a malformed request gets EINVAL
            policy = None
        if policy is not None and len(fds) == 4:
            uid, gid = os.getuid(), os.getgid()
            pid, achieved, err = clone_sandboxed(wanted)
            if pid == 0:
                code = 3
                # As zygote.cpp: the child dies with gauntlet's forking thread (CLONE_PARENT).
                _libc.prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0)
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
                    code = serve(policy)
                finally:
                    sys.stdout.flush()
                    os._exit(code)
            if pid > 0:
                children.append(pid)
        for fd in fds:
            os.close(fd)
        try:
            sock.send(_struct.pack("<qIq", pid, achieved, err))
        except OSError:
            break
    for pid in children:  # the parent went away: take every child started with it
        try:
            os.kill(pid, 9)
        except OSError:
            pass
    return 0


def main(argv):
    if len(argv) >= 2 and argv[1] == "--zygote":
        return zygote_main()
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
        return serve(policy)
    sys.stderr.write("gauntlet_pyworker is started by gauntlet, not by hand.\n"
                     "usage: gauntlet_pyworker.py --serve --policy HEX | --zygote\n")
    return 2


if __name__ == "__main__":
    code = main(sys.argv)
    sys.stdout.flush()
    os._exit(code)
