# The payloads of the frames: tensors and the Load, Case and Time messages, as src/common/wire.cpp encodes them.
from . import state
from .wire import CALL_OK, Reader, Truncated, Writer


# ---- tensors (wire.cpp put_tensor / get_tensor) ------------------------------------------------

def get_tensor(r):
    code = r.u8()
    ndim = r.u8()
    if code >= len(state.DTYPES):
        raise Truncated("tensor of an unsupported dtype")
    dtype = state.DTYPES[code]
    sizes = [r.i64() for _ in range(ndim)]
    strides = [r.i64() for _ in range(ndim)]
    offset = r.i64()
    nbytes = r.u64()
    if any(s < 0 for s in sizes) or any(s < 0 for s in strides) or offset < 0:
        raise Truncated("bad tensor layout")
    esize = state.torch.empty((), dtype=dtype).element_size()
    if nbytes % esize:
        raise Truncated("storage size not a multiple of the element size")
    if state.DEVICE != "cpu":
        # Left in the frame's bytes until the case has its GPU turn (on_device): the copy to the
        # GPU is GPU work, the frame's trip through the pipe is not.
        raw = state.torch.frombuffer(r.raw_view(nbytes), dtype=state.torch.uint8) if nbytes else None
        return Staged(raw, dtype, sizes, strides, offset)
    if nbytes:
        # Straight from the frame's bytes into an aligned CPU tensor of its own (the frame's buffer
        # is not kept).
        base = state.torch.frombuffer(r.raw_view(nbytes), dtype=state.torch.uint8).clone().view(dtype)
    else:
        base = state.torch.empty(0, dtype=dtype)
    return base.as_strided(sizes, strides, offset)  # the whole storage: strides, offset and overlaps kept


class Staged:
    """A device tensor of a case still in the frame's bytes: its storage, dtype and layout."""
    __slots__ = ("raw", "dtype", "sizes", "strides", "offset")

    def __init__(self, raw, dtype, sizes, strides, offset):
        self.raw, self.dtype, self.sizes, self.strides, self.offset = raw, dtype, sizes, strides, offset

    def to_device(self):
        if self.raw is None:
            base = state.torch.empty(0, dtype=self.dtype, device=state.DEVICE)
        else:
            base = self.raw.to(state.DEVICE).view(self.dtype)  # one copy, into the device's storage
        return base.as_strided(self.sizes, self.strides, self.offset)


def on_device(args):
    """A case's arguments with its staged tensors copied to the device (under the GPU turn)."""
    return [a.to_device() if isinstance(a, Staged) else a for a in args]


def tensor_bytes(t):
    """The bytes of a contiguous CPU tensor (any dtype, bfloat16 and bool included), as a view of
    its storage (no copy: the view keeps the tensor alive until the frame is written)."""
    flat = t.reshape(-1)
    if flat.numel() == 0:
        return b""
    return memoryview(flat.view(state.torch.uint8).numpy())


def put_tensor(w, t):
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    t = t.contiguous()
    try:
        code = state.DTYPES.index(t.dtype)
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
    w.u64(memoryview(b).nbytes)
    w.raw(b)


# ---- Load and Case ---------------------------------------------------------------------------------

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
    return w  # its parts, written as they are (write_frame); host_copies: CUDA only, absent here


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
    handshake = r.u8() != 0 if not r.at_end() else False  # wire.h CaseRequest::turn_handshake
    if not r.at_end():
        raise Truncated("trailing bytes after message")
    return {"case_id": case_id, "args": args, "repeat": repeat, "turn_handshake": handshake}


def decode_load(payload):
    r = Reader(payload)
    m = {"so_path": r.str(), "entry": r.str(), "poison_byte": r.u8(), "threads": r.u32(),
         "record_ops": r.u8() != 0, "guard_bytes": r.u32(), "device": "cpu", "build_dir": "",
         "hardware_queues": 0}
    if not r.at_end():
        m["device"] = r.str()
    if not r.at_end():
        m["build_dir"] = r.str()  # the module's own build directory (building.py)
    if not r.at_end():
        m["hardware_queues"] = r.u32()  # wire.h LoadRequest::hardware_queues
    if not r.at_end():
        raise Truncated("trailing bytes after message")
    return m


# ---- Time and Peaks (src/common/timing_wire.cpp) ----------------------------------------------------

MAX_SAMPLES = 1 << 20


def decode_time(payload):
    r = Reader(payload)
    n = r.u32()
    if n == 0 or n > 64:
        raise Truncated("bad input-set count")
    # On the host: serve_timing copies them to the device once it holds the GPU turn.
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
    m["turn_handshake"] = r.u8() != 0 if not r.at_end() else False  # timing.h TimeRequest::turn_handshake
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
