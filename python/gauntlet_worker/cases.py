# One Case of a candidate module: the call, its outputs' aliasing, the inputs it changed, its errors as replies.
import time

from . import state, turns
from .loading import with_constants
from .poisons import poison_cuda_cache
from .wire import CALL_EXCEPTION, CALL_OK, CALL_OOM, WORKER_INTERNAL_ERROR


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
        return state.torch.empty(0, dtype=state.torch.uint8)
    whole = t.as_strided((nbytes // esize,), (1,), 0)
    if whole.dtype == state.torch.bool:
        whole = whole.view(state.torch.uint8)
    return whole.view(state.torch.uint8).clone()


def first_line(s):
    s = str(s).strip()
    return s.splitlines()[0] if s else s


def error_text(e):
    """An exception in one line that always says something: a MemoryError's str() is empty."""
    text = "%s: %s" % (type(e).__name__, first_line(e)) if first_line(e) else type(e).__name__
    if isinstance(e, MemoryError):
        text += " (out of memory: more than the worker's memory limit, --memory-limit)"
    return text


def new_reply(case_id, code=CALL_OK, message=""):
    """A CaseReply with no calls yet (messages.encode_case_reply's fields)."""
    return {"case_id": case_id, "code": code, "message": message, "calls": [], "inputs_unchanged": True,
            "kernel_seconds": 0.0, "aten_ops": [], "findings": []}


def internal_error_reply(case_id, message):
    """The worker's own failure with a case (the parent makes it a harness error, never the module's)."""
    return new_reply(case_id, WORKER_INTERNAL_ERROR, message)


def exception_reply(rep, e):
    text = error_text(e)
    low = text.lower()
    oom = isinstance(e, MemoryError) or "out of memory" in low or "can't allocate memory" in low \
        or type(e).__name__ == "OutOfMemoryError"
    rep["code"] = CALL_OOM if oom else CALL_EXCEPTION
    rep["message"] = ("out of memory: " if oom else "") + text
    rep["calls"] = []
    return rep


def as_outputs(result):
    if isinstance(result, state.torch.Tensor):
        return [result]
    if isinstance(result, (tuple, list)) and all(isinstance(t, state.torch.Tensor) for t in result):
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


def surface_launch_error():
    """Raises the error of a kernel launch CUDA refused during the module's call (a grid of 0
    blocks for an empty input, too many threads), which the module did not check. CUDA keeps such
    an error pending instead of raising it, and torch's next launch reports it: without this, the
    next case's copy to the device, which is the worker's, fails with the module's error (seen on
    the KernelBench leaderboard as a harness error). torch checks for a pending error after each of
    its launches, so one tiny launch of its own raises it here, inside the call."""
    state.torch.ones(1, device="cuda")


def run_case(model, req, record_ops):
    rep = new_reply(req["case_id"])
    inputs = [a for a in req["args"] if isinstance(a, state.torch.Tensor)]
    if state.POISON["byte"] and state.DEVICE == "cuda":
        try:  # the poisoning is the harness's; its failure must not become the module's error
            sizes = [t.numel() * t.element_size() for t in inputs]
            poison_cuda_cache(state.POISON["byte"], sum(sizes), max(sizes or [0]))
        except Exception:  # noqa: BLE001
            pass
    before = [storage_bytes_tensor(t) for t in inputs]
    recorder = OpRecorder() if record_ops else None
    previous = []
    seconds = 0.0
    for _ in range(max(1, req["repeat"])):
        t0 = time.perf_counter()
        try:
            with state.torch.no_grad():
                if recorder:
                    result = recorder.record(lambda: model(*with_constants(inputs)))
                else:
                    result = model(*with_constants(inputs))
            outs = as_outputs(result)
            if state.DEVICE != "cpu":
                state.torch.cuda.synchronize()  # asynchronous errors belong to this call
                surface_launch_error()  # and so does a launch CUDA refused
        except turns.TurnLost:
            raise  # the worker's exchange with the parent broke: not the module's exception
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
            host = t.detach().cpu().contiguous()
            if host.data_ptr() == t.data_ptr():  # a CPU output: a copy of its own, as later calls may change it
                host = host.clone()
            call.append({"tensor": host, "device": str(t.device),
                         "alias_input": ai, "alias_output": ao, "contiguous": t.is_contiguous(),
                         "alias_previous_call": ap})
        rep["calls"].append(call)
        previous = outs
    for j, t in enumerate(inputs):
        now = storage_bytes_tensor(t)
        if now.numel() == before[j].numel() and state.torch.equal(now, before[j]):
            continue
        rep["inputs_unchanged"] = False
        if now.numel() != before[j].numel():
            rep["findings"].append((2, 0, j, 0, now.numel() - before[j].numel(), before[j].numel()))
            continue
        changed = (now != before[j]).nonzero().reshape(-1)
        rep["findings"].append((2, 0, j, int(changed[0]), int(changed.numel()), before[j].numel()))
    rep["kernel_seconds"] = max(0.0, seconds - turns.TURN["waited"])  # a paused compile's wait for the GPU is not the kernel's
    if recorder:
        rep["aten_ops"] = recorder.names
    return rep
