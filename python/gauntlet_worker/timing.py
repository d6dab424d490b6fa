# The timing gate's Time and Peaks frames, as src/worker/timing_loop.cpp answers them.
import time

from . import state
from .baselines import NoBaseline, module_call_args
from .cases import as_outputs, exception_reply, first_line
from .messages import new_time_reply
from .poisons import keep_heap
from .wire import CALL_EXCEPTION, CALL_OK, WORKER_INTERNAL_ERROR

# A TimeRequest is answered exactly as the native worker answers it (include/gauntlet/common/timing.h):
# the candidate once per input set, untimed (the outputs the parent verifies); the baseline's
# availability; warm-up, which sizes the timed loop to the budget; then candidate and baseline
# interleaved (alternating which goes first), rotating over the sets, each timed call's outputs
# compared bitwise (NaN payloads aside) with its set's verified ones. CUDA: a scratch buffer zeroed
# before every timed call (L2 flush), CUDA events on the current stream, the whole device
# synchronized after the end event. CPU: the steady clock (time.perf_counter), `threads` threads.


def same_bits(a, b):
    """timing_loop.cpp same_bits: equal shapes, dtypes, devices and values, NaN where NaN."""
    if tuple(a.shape) != tuple(b.shape) or a.dtype != b.dtype or a.device != b.device:
        return False
    if a.numel() == 0:
        return True
    ac, bc = a.contiguous(), b.contiguous()
    if state.torch.equal(ac, bc):
        return True
    if not ac.is_floating_point():
        return False
    an, bn = ac.isnan(), bc.isnan()
    return state.torch.equal(an, bn) and state.torch.equal(ac.masked_fill(an, 0), bc.masked_fill(bn, 0))


class Timer:
    """CUDA events on the current stream (the whole device synchronized after the end event), or
    the steady clock on the CPU; milliseconds."""

    def __init__(self, cuda):
        self.cuda = cuda
        self.t0 = 0.0
        if cuda:
            self.start_ev = state.torch.cuda.Event(enable_timing=True)
            self.end_ev = state.torch.cuda.Event(enable_timing=True)

    def start(self):
        if self.cuda:
            self.start_ev.record()
        else:
            self.t0 = time.perf_counter()

    def stop(self):
        if not self.cuda:
            return (time.perf_counter() - self.t0) * 1000.0
        self.end_ev.record()
        state.torch.cuda.synchronize()
        return float(self.start_ev.elapsed_time(self.end_ev))


def _call(fn, args, sync):
    """(outputs, code, message) of one call under no_grad; sync: wait for the device (CUDA)."""
    try:
        with state.torch.no_grad():
            outs = fn(args)
        if sync:
            state.torch.cuda.synchronize()  # an asynchronous fault belongs to this call
        return outs, CALL_OK, ""
    except BaseException as e:  # noqa: B902 - nothing may escape the serve loop
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            e = RuntimeError("the module raised %s" % type(e).__name__)
        r = exception_reply({}, e)
        return None, r["code"], r["message"]


def run_timing(model, req, baselines):
    """timing_loop.cpp run_timing, for a module (candidate: model(*tensor arguments)); no autograd."""
    with state.torch.no_grad():
        return _run_timing(model, req, baselines)


def _run_timing(model, req, baselines):
    cuda = state.DEVICE == "cuda"
    rep = new_time_reply(cuda)

    def failed(code, message):
        rep["code"] = code
        rep["message"] = message
        return rep

    try:
        if not cuda:
            state.torch.set_num_threads(max(1, req["threads"]))
            keep_heap()
        sets = req["sets"]
        timer = Timer(cuda)
        if cuda:
            try:
                rep["device"] = state.torch.cuda.get_device_name()
                props = state.torch.cuda.get_device_properties(state.torch.cuda.current_device())
                rep["l2_bytes"] = int(getattr(props, "L2_cache_size", 0) or 0)
            except Exception:  # noqa: BLE001 - the name is for the report only
                pass
        flush = None
        if cuda and req["flush_bytes"] > 0:
            flush = state.torch.empty(req["flush_bytes"], dtype=state.torch.uint8, device="cuda")

        def candidate(args):
            return as_outputs(model(*module_call_args(args)))

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
    cuda = state.DEVICE == "cuda"
    p = {"device": "", "copy_bytes_per_s": 0.0, "matmul_flops_f32": 0.0, "matmul_flops_f16": 0.0,
         "matmul_flops_bf16": 0.0, "how": ""}
    try:
        dev = "cuda" if cuda else "cpu"
        # A CPU's name is the parent's to give (it keys the cache with it); the GPU's only the child sees.
        if cuda:
            try:
                p["device"] = state.torch.cuda.get_device_name()
            except Exception:  # noqa: BLE001
                p["device"] = "CUDA device"
        # Copy rate: GPU 1 GiB (far past the L2, which the gate flushes before every call); CPU the
        # cache-resident rate of a 256 KiB copy, in batches of 10 so Python's per-call overhead
        # (a few microseconds, as long as the copy itself) does not lower it.
        copy_bytes = (1 << 30) if cuda else (1 << 18)
        src = state.torch.empty(copy_bytes, dtype=state.torch.uint8, device=dev).fill_(1)
        dst = state.torch.empty(copy_bytes, dtype=state.torch.uint8, device=dev)
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
            a = state.torch.randn(n, n, dtype=dtype, device=dev)
            b = state.torch.randn(n, n, dtype=dtype, device=dev)
            c = state.torch.mm(a, b)  # warm-up (library handles, kernel selection)
            t = _best_seconds(cuda, 5, lambda: state.torch.mm(a, b, out=c))
            return 2.0 * n * n * n / t if t > 0 else 0.0

        if cuda:
            # A float32 kernel may use TF32 tensor cores: its floor is the TF32 rate.
            tf32 = state.torch.backends.cuda.matmul.allow_tf32
            state.torch.backends.cuda.matmul.allow_tf32 = True
            try:
                p["matmul_flops_f32"] = rate(state.torch.float32, 8192)
            finally:
                state.torch.backends.cuda.matmul.allow_tf32 = tf32
            p["matmul_flops_f16"] = rate(state.torch.float16, 8192)
            p["matmul_flops_bf16"] = rate(state.torch.bfloat16, 8192)
            p["how"] = ("device copy of 1 GiB; torch.mm 8192^3 (float32 with TF32 allowed), best of 5, CUDA events "
                        "(Python worker)")
        else:
            # Nominal, as the native worker: every thread at 5 GHz retiring two 16-wide float32 FMAs a
            # cycle (AVX-512), 16 times that for float16/bfloat16 (AMX).
            f32 = float(state.torch.get_num_threads()) * 5e9 * 64
            p["matmul_flops_f32"] = f32
            p["matmul_flops_f16"] = p["matmul_flops_bf16"] = 16 * f32
            p["how"] = ("cache-resident memory copy of 256 KiB, best of 200 batches of 10 copies, steady clock "
                        "(Python worker); matmul: nominal ceiling threads x 5 GHz x 64 float32 flop/cycle (x16 for "
                        "float16/bfloat16)")
    except Exception as e:  # noqa: BLE001
        p["how"] += " (measurement failed: %s: %s)" % (type(e).__name__, first_line(e))
    return p
