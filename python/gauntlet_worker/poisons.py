# Memory the module did not write: the memory gate's poisoned heap and CUDA cache, and the timed loop's kept heap.
from . import state

# A Load with a nonzero poison byte asks for every new buffer to start out holding that byte, so
# that two children poisoned differently give different outputs where a module reads memory it
# never wrote. The native worker swaps LibTorch's allocator for a poisoning one; a Python child
# cannot, so it poisons below and around torch's allocators: on the CPU, glibc's M_PERTURB fills
# every block malloc hands out (the children run without glibc's per-thread cache, which would
# bypass it; blocks above 32 MB are mmapped, zeroed, and not poisoned); on a GPU, the CUDA caching
# allocator's free memory is filled before each call, as the native worker does (device_poison.cpp).


def poison_heap(byte):
    """CPU: new heap blocks hold `byte`. The note for the sandbox notes, "" when glibc refused."""
    M_PERTURB, M_MMAP_THRESHOLD = -6, -3
    if byte == 0xFF:  # glibc fills with value^0xFF and is off at 0: 0xFF cannot be asked for
        return ""
    try:
        state.libc.mallopt(M_MMAP_THRESHOLD, 32 << 20)  # the largest glibc takes on 64-bit
        if state.libc.mallopt(M_PERTURB, byte ^ 0xFF) != 1:  # allocations get the complement of the value
            return ""
    except (AttributeError, OSError):  # not glibc
        return ""
    return " heap-poison(0x%02x, glibc M_PERTURB, blocks up to 32 MB)" % byte


MIB = 1 << 20


def poison_cuda_cache(byte, input_bytes, largest_input_bytes):
    """GPU: the caching allocator's free memory holds `byte` (the native worker's sizes: 16 MiB of
    small-pool blocks, a block for the largest input, 20 MiB large-pool blocks up to 4x the inputs)."""
    try:
        state.torch.cuda.empty_cache()  # segments with no live block go back: what is cached is ours
    except Exception:  # noqa: BLE001
        pass
    want = min(4 << 30, 4 * max(input_bytes, 0) + 16 * MIB)
    held = []
    try:
        for _ in range(16):
            held.append(state.torch.empty(MIB, dtype=state.torch.uint8, device="cuda"))
        big = (4 * largest_input_bytes + 2 * MIB - 1) // (2 * MIB) * (2 * MIB)
        if 20 * MIB < big <= (4 << 30):
            held.append(state.torch.empty(big, dtype=state.torch.uint8, device="cuda"))
        for _ in range(0, max(want - 16 * MIB, 20 * MIB), 20 * MIB):
            held.append(state.torch.empty(20 * MIB, dtype=state.torch.uint8, device="cuda"))
    except Exception:  # noqa: BLE001 - out of device memory: poison what was obtained
        pass
    try:
        for t in held:
            t.fill_(byte)
    except Exception:  # noqa: BLE001 - a device fault shows in the call that follows
        pass
    del held  # back to the cache; later allocations on this stream are ordered after the fills


def keep_heap():
    """CPU: glibc's malloc keeps freed memory instead of returning it to the kernel. Otherwise the
    megabyte-sized temporaries of a module's eager calls are mmapped and unmapped, or the heap
    trimmed, on every call, and the timed loop measures page faults: measured on the softmax
    module at [8, 32, 1000], 1.1 ms per call with glibc's defaults, 0.24 ms with the heap kept
    (eager Model 0.5 vs 0.21 ms); which state a child landed in varied from run to run."""
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
    try:
        state.libc.mallopt(M_MMAP_THRESHOLD, 32 << 20)   # the largest glibc takes on 64-bit
        state.libc.mallopt(M_TRIM_THRESHOLD, 512 << 20)
    except (AttributeError, OSError):  # not glibc
        pass
