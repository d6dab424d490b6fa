# The frames of gauntlet's parent<->worker protocol (src/common/wire.cpp): checksum, framing, Reader/Writer.
import ctypes
import os
import struct

from . import state

MAGIC = 0x31544E47
MAX_FRAME = 8 << 30

T_LOAD, T_LOAD_REPLY, T_CASE, T_CASE_REPLY, T_VIOLATION, T_BYE, T_SIGNAL = 1, 2, 3, 4, 5, 6, 7
T_TIME, T_TIME_REPLY, T_PEAKS, T_PEAKS_REPLY = 8, 9, 10, 11

REQUEST_FD, REPLY_FD, STATUS_FD = 3, 4, 5

CALL_OK, CALL_EXCEPTION, CALL_OOM, CALL_BAD_ARGS = 0, 1, 2, 3
WORKER_INTERNAL_ERROR = 100


def checksum(payload):
    """FNV-1a 64 over the payload's little-endian 64-bit words, then its last bytes, as wire.cpp's checksum()."""
    h = 1469598103934665603
    words = len(payload) // 8
    for (w,) in struct.iter_unpack("<Q", memoryview(payload)[:8 * words]):
        h = ((h ^ w) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    for c in bytes(payload[8 * words:]):
        h = ((h ^ c) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def load_fast_checksum():
    path = os.environ.get("GAUNTLET_FNV_LIB", "")
    if not path or not os.path.exists(path):
        return False
    try:
        lib = ctypes.CDLL(path)
        fn = lib.gauntlet_fnv1a64
        fn.restype = ctypes.c_uint64
        fn.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        if fn(b"gauntlet wire", 13) != checksum(b"gauntlet wire"):
            return False
        state.fnv_c = fn
        return True
    except (OSError, AttributeError):
        return False


def _checksum_fast(payload):
    if state.fnv_c is not None and len(payload) >= 64:
        return state.fnv_c(bytes(payload), len(payload))
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
