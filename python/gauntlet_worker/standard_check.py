# The field's standard check of a module: KernelBench's own correctness check, run in a sandboxed child.
"""A Load with entry "kbcheck:<ModelNew>" starts this role (docs/audit.md, "The standard check"),
and a Check frame then runs it. The child is a candidate's child (the candidate's device, its
prebuilt extensions, its sandbox) that does what KernelBench's eval does once per kernel (src/eval.py,
eval_kernel_against_ref with run_and_check_correctness, as of KernelBench v0.1): seed 42, Model and
ModelNew built from get_init_inputs() after the same seed, then 5 trials, each with get_inputs()
drawn after its own seed (from torch.randint after manual_seed(42)), Model's and ModelNew's outputs
compared by their shapes and torch.allclose(atol=1e-2, rtol=1e-2). It answers in the CheckReply:
{"verdict": "accept" | "reject" | "error", "reason": "..."}. Reject is what KernelBench counts as
incorrect (ModelNew does not load, raises, returns another shape or values past allclose); error
means the check itself could not run (no Model or get_inputs, Model or get_inputs raised), which
KernelBench would not have blamed on the kernel either."""
import json

from . import state
from .cases import as_outputs, error_text
from .loading import load_source, pick

SEED = 42
TRIALS = 5
TOLERANCE = 1e-2


class Verdict(Exception):
    """Ends the check with a verdict (raised from the step that decides it)."""

    def __init__(self, verdict, reason):
        super().__init__(reason)
        self.verdict = verdict
        self.reason = reason


def _set_seed(seed):
    state.torch.manual_seed(seed)
    if state.DEVICE == "cuda":
        state.torch.cuda.manual_seed(seed)


def _on_device(x):
    if state.DEVICE == "cuda" and isinstance(x, state.torch.Tensor):
        return x.cuda()
    return x


def _step(verdict, what, f):
    """f(), or the check ends with `verdict` saying `what` failed and why."""
    try:
        return f()
    except Verdict:
        raise
    except BaseException as e:  # noqa: B902 - a module's SystemExit is a failure like any other
        if isinstance(e, KeyboardInterrupt):
            raise
        raise Verdict(verdict, "%s: %s" % (what, error_text(e)))


def _outputs(result, who):
    try:
        return as_outputs(result)
    except TypeError:
        raise Verdict("reject" if who == "ModelNew" else "error",
                      "%s returned %s, not a tensor or a tuple of tensors" % (who, type(result).__name__))


def _compare(trial, expected, got):
    """None when ModelNew's outputs pass KernelBench's comparison, else why not."""
    if len(expected) != len(got):
        return "trial %d: ModelNew returned %d outputs, Model %d" % (trial, len(got), len(expected))
    for i, (e, g) in enumerate(zip(expected, got)):
        if tuple(e.shape) != tuple(g.shape):
            return "trial %d: output shape mismatch: expected %s, got %s" % (trial, list(e.shape), list(g.shape))
        try:
            close = bool(state.torch.allclose(e, g, atol=TOLERANCE, rtol=TOLERANCE))
        except Exception as ex:  # noqa: BLE001 - another dtype or device: KernelBench's except counts it incorrect
            return "trial %d: allclose raised %s" % (trial, error_text(ex))
        if not close:
            diff = (e.double() - g.double()).abs()
            worst = float(diff.max()) if diff.numel() else 0.0
            note = "" if len(expected) == 1 else " (output %d)" % i
            return "trial %d: output mismatch%s: allclose(atol=rtol=1e-2) fails, max difference %.6g" % (trial, note, worst)
    return None


class StandardCheck:
    """Loads the module and builds Model and ModelNew at the Load (under its deadline, which covers
    imports and builds); run() then does the trials, one Check request under the gate's --timeout,
    so that a ModelNew that hangs costs one --timeout, as in a gate. A step that fails while loading
    decides the verdict there, and run() returns it."""

    def __init__(self, path, source, entry, ref):
        self.decided = None
        self.entry = entry or "ModelNew"
        try:
            self._load(path, source, ref)
        except Verdict as v:
            self.decided = v

    def _load(self, path, source, ref):
        torch = state.torch
        refmod = _step("error", "the reference module does not load",
                       lambda: load_source(ref[0], ref[1], "gauntlet_reference")) if ref else None
        mod = _step("reject", "the module does not load", lambda: load_source(path, source))
        mods = [refmod, mod]  # Model, get_inputs() and get_init_inputs() from the reference module when there is one
        model_cls, self.get_inputs = pick(mods, "Model"), pick(mods, "get_inputs")
        if model_cls is None or not callable(self.get_inputs):
            raise Verdict("error", "the module defines no %s: KernelBench's check compares ModelNew with Model on "
                          "get_inputs()" % ("Model" if model_cls is None else "get_inputs()"))
        new_cls = getattr(mod, self.entry, None)
        if new_cls is None:
            raise Verdict("reject", "the module defines no %s" % self.entry)
        init = pick(mods, "get_init_inputs")  # KernelBench takes all three from the reference's file
        _set_seed(SEED)
        init_inputs = _step("error", "get_init_inputs() raised", lambda: list(init()) if callable(init) else [])
        init_inputs = [_on_device(x) for x in init_inputs]
        with torch.no_grad():
            _set_seed(SEED)
            self.model = _step("error", "Model(*get_init_inputs()) raised", lambda: model_cls(*init_inputs))
            _set_seed(SEED)
            self.new = _step("reject", "%s(*get_init_inputs()) raised" % self.entry, lambda: new_cls(*init_inputs))
            if state.DEVICE == "cuda":
                self.model = _step("error", "Model.cuda() raised", lambda: self.model.cuda())
                self.new = _step("reject", "%s.cuda() raised" % self.entry, lambda: self.new.cuda())

    def _trials(self):
        torch = state.torch
        with torch.no_grad():
            torch.manual_seed(SEED)
            seeds = [int(torch.randint(0, 2 ** 32 - 1, (1,)).item()) for _ in range(TRIALS)]
            for trial, seed in enumerate(seeds):
                _set_seed(seed)
                inputs = [_on_device(x) for x in _step("error", "get_inputs() raised", lambda: list(self.get_inputs()))]
                _set_seed(seed)
                expected = _outputs(_step("error", "trial %d: Model raised" % trial, lambda: self.model(*inputs)), "Model")
                _set_seed(seed)
                got = _outputs(_step("reject", "trial %d: %s raised" % (trial, self.entry), lambda: self.new(*inputs)),
                               "ModelNew")
                if state.DEVICE == "cuda":
                    _step("reject", "trial %d: %s's kernels failed" % (trial, self.entry), torch.cuda.synchronize)
                why = _compare(trial, expected, got)
                if why:
                    raise Verdict("reject", why)
        return Verdict("accept", "%d trials of get_inputs() (seed %d) pass allclose(atol=rtol=1e-2)" % (TRIALS, SEED))

    def run(self):
        """The CheckReply's payload: the verdict as JSON."""
        v = self.decided
        if v is None:
            try:
                v = self._trials()
            except Verdict as e:
                v = e
        return json.dumps({"verdict": v.verdict, "reason": v.reason}).encode("utf-8")
