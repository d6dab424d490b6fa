# The frames of gauntlet's parent<->worker protocol (src/common/wire.cpp): checksum, framing, Reader/Writer.
import ctypes
import os
import struct

from . import state

MAGIC = 0x31544E47
MAX_FRAME = 64 << 30  # wire.h kMaxFrameBytes: a sanity bound; --memory-limit is the real one

T_LOAD, T_LOAD_REPLY, T_CASE, T_CASE_REPLY, T_VIOLATION, T_BYE, T_SIGNAL = 1, 2, 3, 4, 5, 6, 7
T_TIME, T_TIME_REPLY, T_PEAKS, T_PEAKS_REPLY = 8, 9, 10, 11
T_TURN_REQUEST, T_TURN_GRANT, T_TURN_RELEASE = 12, 13, 14  # a case's GPU turn (wire.h CaseRequest)
T_CHECK, T_CHECK_REPLY = 15, 16  # the standard check's trials (standard_check.py), its verdict as JSON
T_LAST = T_CHECK_REPLY

REQUEST_FD, REPLY_FD, STATUS_FD = 3, 4, 5

CALL_OK, CALL_EXCEPTION, CALL_OOM, CALL_BAD_ARGS = 0, 1, 2, 3
WORKER_INTERNAL_ERROR = 100


FNV_OFFSET, FNV_PRIME, MASK64 = 1469598103934665603, 1099511628211, 0xFFFFFFFFFFFFFFFF


def _words_python(h, view):
    for (w,) in struct.iter_unpack("<Q", view):
        h = ((h ^ w) * FNV_PRIME) & MASK64
    return h


def _bytes_python(h, data):
    for c in data:
        h = ((h ^ c) * FNV_PRIME) & MASK64
    return h


def checksum(payload):
    """wire.cpp's checksum() (include/gauntlet/common/frame_checksum.h) in Python alone: FNV-1a 64 over
    the payload's little-endian 64-bit words, then its last bytes. The C helper is checked against it."""
    view = memoryview(payload).cast("B")
    whole = len(view) // 8 * 8
    return _bytes_python(_words_python(FNV_OFFSET, view[:whole]), bytes(view[whole:]))


def load_fast_checksum():
    path = os.environ.get("GAUNTLET_FNV_LIB", "")
    if not path or not os.path.exists(path):
        return False
    try:
        lib = ctypes.CDLL(path)
        fn = lib.gauntlet_fnv1a64_words
        fn.restype = ctypes.c_uint64
        fn.argtypes = [ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t]
        state.fnv_c = fn
        if Checksum.of(b"gauntlet wire") != checksum(b"gauntlet wire"):
            state.fnv_c = None
            return False
        return True
    except (OSError, AttributeError):
        state.fnv_c = None
        return False


def _address(view):
    """The address of a contiguous buffer's first byte without copying it; None if it cannot tell."""
    if not view.readonly:
        return ctypes.addressof(ctypes.c_char.from_buffer(view))
    try:
        import numpy  # a read-only buffer (bytes, a tensor's numpy bytes): numpy finds its address
    except ImportError:
        return None
    return numpy.frombuffer(view, dtype=numpy.uint8).ctypes.data


def _words(h, view):
    """h after FNV-1a over the little-endian 64-bit words of `view` (its length a multiple of 8)."""
    if state.fnv_c is not None and len(view) >= 64:
        address = _address(view)
        if address is not None:
            return state.fnv_c(h, address, len(view))
    return _words_python(h, view)


class Checksum:
    """checksum() over a payload given in parts (a frame written from its parts, never joined)."""

    def __init__(self):
        self.h = FNV_OFFSET
        self.carry = b""  # the bytes of a word not yet complete (fewer than 8)

    @classmethod
    def of(cls, payload):
        c = cls()
        c.update(payload)
        return c.digest()

    def update(self, part):
        view = memoryview(part).cast("B")
        if self.carry:
            need = 8 - len(self.carry)
            self.carry += bytes(view[:need])
            view = view[need:]
            if len(self.carry) < 8:
                return
            self.h = _words(self.h, memoryview(self.carry))
            self.carry = b""
        aligned = len(view) - len(view) % 8
        if aligned:
            self.h = _words(self.h, view[:aligned])
        self.carry = bytes(view[aligned:])

    def digest(self):
        return _bytes_python(self.h, self.carry)


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


def read_into(fd, buf):
    """Fills the bytearray `buf` from fd; False at EOF before it is full."""
    view = memoryview(buf)
    got = 0
    while got < len(buf):
        try:
            k = os.readv(fd, [view[got:]])
        except InterruptedError:
            continue
        if k == 0:
            return False
        got += k
    return True


def read_frame(fd):
    """(type, payload as a bytearray), or None on EOF / a malformed frame."""
    head = read_exact(fd, 16)
    if not head or len(head) != 16:
        return None
    magic, ftype, length = struct.unpack("<IIQ", head)
    if magic != MAGIC or ftype < 1 or ftype > T_LAST or length > MAX_FRAME:
        return None
    payload = bytearray(length)  # read in place: a tensor's bytes are copied once, into the tensor
    if length and not read_into(fd, payload):
        return None
    tail = read_exact(fd, 8)
    if not tail or len(tail) != 8:
        return None
    if struct.unpack("<Q", tail)[0] != Checksum.of(payload):
        return None
    return ftype, payload


class FrameTooLarge(ValueError):
    pass


def write_frame(fd, ftype, payload):
    """Writes bytes, or a Writer's parts as they are (a tensor's bytes are never joined or copied)."""
    parts = payload.parts if isinstance(payload, Writer) else [payload]
    length = sum(memoryview(p).nbytes for p in parts)
    if length > MAX_FRAME:  # refused before a byte is written: the reader would call the frame garbage
        raise FrameTooLarge("a frame of %.1f GiB is over the wire's limit of %d GiB" % (length / 2.0**30, MAX_FRAME >> 30))
    check = Checksum()
    for p in parts:
        check.update(p)
    views = [memoryview(struct.pack("<IIQ", MAGIC, ftype, length))]
    views += [memoryview(p).cast("B") for p in parts if memoryview(p).nbytes]
    views.append(memoryview(struct.pack("<Q", check.digest())))
    for view in views:
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

    def raw_view(self, n):
        """n bytes as a view of the message (no copy)."""
        if len(self.data) - self.pos < n:
            raise Truncated("truncated message")
        v = memoryview(self.data)[self.pos:self.pos + n]
        self.pos += n
        return v

    def at_end(self):
        return self.pos == len(self.data)
