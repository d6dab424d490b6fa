#!/usr/bin/env python3
"""gauntlet-pyworker: the worker side of gauntlet's parent<->worker protocol for Python modules.

Started by gauntlet (never by hand) as `python3 gauntlet_pyworker.py --serve --policy HEX`, through
the same fork+exec launcher as the C++ worker (namespaces come from the launcher's clone). It reads
frames on fd 3 and writes them on fd 4, exactly as src/common/wire.cpp encodes them:

  frame   = u32 magic "GNT1" | u32 type | u64 length | payload | u64 FNV-1a-64(payload)
  Load    -> LoadReply     so_path = the module's .py file, entry = the class name (ModelNew)
  Case    -> CaseReply     the module is called with the case's tensor arguments, in schema order
  Time/Peaks -> TimeReply/PeaksReply-shaped error: the timing gate is not implemented here
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
MS_NOSUID, MS_NODEV, MS_REC, MS_PRIVATE = 2, 4, 16384, 1 << 18
PR_SET_NO_NEW_PRIVS = 38


def _mount(src, target, fstype, flags, data):
    enc = lambda s: s.encode() if s is not None else None
    rc = _libc.mount(enc(src), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data))
    return rc == 0, os.strerror(ctypes.get_errno())


def install_seccomp(seccomp):
    """The C++ child's filter (sandbox_child.cpp install_seccomp, CPU variant)."""
    import signal
    f = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    trap = seccomp.TRAP
    for name in ["socket", "socketpair", "connect", "bind", "listen", "accept", "accept4", "execve",
                 "execveat", "fork", "vfork", "ptrace", "process_vm_readv", "process_vm_writev", "mount",
                 "umount2", "unshare", "setns", "chroot", "pivot_root", "bpf", "perf_event_open", "keyctl",
                 "add_key", "request_key", "io_uring_setup", "kexec_load", "init_module", "finit_module",
                 "tkill", "pidfd_open", "pidfd_send_signal", "pidfd_getfd"]:
        try:
            f.add_rule(trap, name)
        except Exception:  # a name this libseccomp does not know on this architecture
            pass
    CLONE_THREAD = 0x10000
    f.add_rule(trap, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, CLONE_THREAD, 0))
    f.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    me = os.getpid()
    for name in ["kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo"]:
        f.add_rule(trap, name, seccomp.Arg(0, seccomp.NE, me))
    # The module must not catch SIGSYS (a trapped call then kills the process: crash, "killed by SIGSYS").
    f.add_rule(seccomp.KILL_PROCESS if hasattr(seccomp, "KILL_PROCESS") else seccomp.KILL,
               "rt_sigaction", seccomp.Arg(0, seccomp.EQ, int(signal.SIGSYS)))
    f.load()


def enter_sandbox(policy):
    """Returns (notes, error). Mirrors src/worker/sandbox_child.cpp enter_sandbox for a CPU child."""
    layers = ["isolation:"]
    if (policy.namespaces & NS_MOUNT) and policy.private_tmp:
        ok, why = _mount(None, "/", None, MS_REC | MS_PRIVATE, None)
        if ok:
            ok, why = _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=256m,mode=1777")
        layers.append("private-tmp" if ok else "private-tmp=unavailable(%s)" % why)
    if any(n.startswith("nvidia") for n in os.listdir("/dev")):
        layers.append("gpu-visible(the Python worker does not hide GPU nodes yet)")
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
        if policy.memory_limit_bytes > 0:
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
                install_seccomp(seccomp)
                layers.append("seccomp")
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

    def __init__(self):
        self.names = []

    def record(self, fn):
        from torch.autograd import profiler
        with profiler.profile(record_shapes=False) as prof:
            out = fn()
        for ev in prof.function_events:
            if ev.name.startswith("aten::") and ev.name not in self.names:
                self.names.append(ev.name)
        return out


def run_case(model, req, record_ops):
    rep = {"case_id": req["case_id"], "code": CALL_OK, "message": "", "calls": [], "inputs_unchanged": True,
           "kernel_seconds": 0.0, "aten_ops": [], "findings": []}
    inputs = [a for a in req["args"] if isinstance(a, torch.Tensor)]
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


def decode_case(payload):
    r = Reader(payload)
    case_id = r.u64()
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
    repeat = r.u32()
    if not r.at_end():
        raise Truncated("trailing bytes after message")
    return {"case_id": case_id, "args": args, "repeat": repeat}


def decode_load(payload):
    r = Reader(payload)
    m = {"so_path": r.str(), "entry": r.str(), "poison_byte": r.u8(), "threads": r.u32(),
         "record_ops": r.u8() != 0, "guard_bytes": r.u32(), "device": "cpu"}
    if not r.at_end():
        m["device"] = r.str()
    if not r.at_end():
        raise Truncated("trailing bytes after message")
    return m


def load_module(path, source, entry):
    import types
    mod = types.ModuleType("gauntlet_module")
    mod.__file__ = path
    sys.modules["gauntlet_module"] = mod
    exec(compile(source, path, "exec"), mod.__dict__)
    if entry in ("", "forward") and not hasattr(mod, entry or "forward"):
        entry = "ModelNew"  # the command line's default entry ("forward") names no class: KernelBench's
    cls = getattr(mod, entry, None)
    if cls is None:
        raise LookupError("the module defines no '%s'" % entry)
    torch.manual_seed(0)
    init = getattr(mod, "get_init_inputs", None)
    model = cls(*init()) if callable(init) else cls()
    if hasattr(model, "eval"):
        model = model.eval()
    return model


def timing_unsupported_reply(ftype):
    """Time/Peaks: not implemented in the Python worker; a harness-coded TimeReply says so."""
    msg = "harness: the Python module worker does not implement the timing protocol yet (docs/modules.md)"
    if ftype == T_TIME:
        w = Writer()
        w.u32(WORKER_INTERNAL_ERROR)
        w.str(msg)
        w.str("")  # timer
        w.str("")  # device
        w.i64(0)   # l2_bytes
        w.u32(0)   # verified sets
        w.u32(0)   # candidate samples
        w.u32(0)   # baseline samples
        w.str("")  # baseline_error
        w.u32(0)
        w.u32(0)
        w.u32(0xFFFFFFFF)
        w.u32(0)
        w.u32(0)   # mismatch outputs
        return T_TIME_REPLY, w.bytes()
    return None, None


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
    if load["device"] != "cpu":
        write_frame(REPLY_FD, T_LOAD_REPLY,
                    encode_load_reply(False, "the Python module worker runs CPU modules only (device=%s)"
                                      % load["device"], "", ""))
        return 4
    # The module's source is read before /tmp is replaced and privileges are dropped.
    try:
        with open(load["so_path"], "r", encoding="utf-8") as f:
            source = f.read()
    except OSError as e:
        write_frame(REPLY_FD, T_LOAD_REPLY, encode_load_reply(False, "cannot read the module %s: %s"
                                                              % (load["so_path"], e), "", ""))
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
    notes, error = enter_sandbox(policy)
    if error:
        write_frame(REPLY_FD, T_LOAD_REPLY, encode_load_reply(False, "harness: sandbox setup failed: " + error, "", ""))
        return 3
    notes += " python-worker(no poison allocator, no canaries%s)" % ("" if fast else ", pure-Python checksum")
    try:
        model = load_module(load["so_path"], source, load["entry"] or "ModelNew")
    except BaseException as e:  # noqa: B902
        tb = traceback.extract_tb(e.__traceback__)
        where = ""
        for fr in tb:
            if fr.filename == load["so_path"]:
                where = " (line %d)" % fr.lineno
        write_frame(REPLY_FD, T_LOAD_REPLY, encode_load_reply(
            False, "loading the Python module failed%s: %s: %s" % (where, type(e).__name__, first_line(e)), "", notes))
        return 4
    write_frame(REPLY_FD, T_LOAD_REPLY, encode_load_reply(True, "", "python:%s" % (load["entry"] or "ModelNew"), notes))

    while True:
        frame = read_frame(REQUEST_FD)
        if frame is None or frame[0] == T_BYE:
            return 0
        ftype, payload = frame
        if ftype in (T_TIME, T_PEAKS):
            rtype, body = timing_unsupported_reply(ftype)
            if rtype is None:
                return 5  # Peaks comes only after a Time the worker refused
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
                rep = run_case(model, req, load["record_ops"])
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


def main(argv):
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
                     "usage: gauntlet_pyworker.py --serve --policy HEX\n")
    return 2


if __name__ == "__main__":
    code = main(sys.argv)
    sys.stdout.flush()
    os._exit(code)
