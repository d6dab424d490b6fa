# The module oracle's reference role (docs/modules.md, "Module oracle"), and Model's key operators.
from . import state
from .cpu_devices import cpu_devices
from .cases import OpRecorder, as_outputs, exception_reply, first_line, new_reply
from .loading import pick, with_constants

# A Load with entry "reference:<Model>:<ModelNew>" starts this role instead of the candidate's: the
# child builds the reference class with the candidate's weights and answers each Case with the
# reference's outputs computed in float64 (call 0) and, when it runs, the same reference in the
# inputs' own dtype (call 1: the framework's own result, which sizes the tolerance). The parent
# never runs Model in a candidate's child, and never runs module code itself.

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
    state.torch.manual_seed(0)  # the candidate's child builds ModelNew after the same seed
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
        state.torch.manual_seed(0)
        get_inputs = pick(self.mods, "get_inputs")
        if not callable(get_inputs):
            raise LookupError("the module defines no get_inputs(): an unmapped module's shapes come from it")
        values = list(get_inputs())
        desc, inputs, constants = [], [], []
        for i, t in enumerate(values):
            if isinstance(t, (bool, int, float)):
                # A scale, a dim, a flag: fixed by the problem (KernelBench's 5_Matrix_scalar_multiplication
                # passes its scalar this way), passed at its place in every call, never varied.
                constants.append({"index": i, "value": t})
                continue
            if not isinstance(t, state.torch.Tensor):
                raise TypeError("get_inputs()[%d] is a %s: unmapped modules take tensors, bools, ints and floats only"
                                % (i, type(t).__name__))
            t = t.detach().cpu()
            inputs.append(t)
            if t.dtype not in state.DTYPES:
                raise TypeError("get_inputs()[%d] has dtype %s, which gauntlet does not generate" % (i, t.dtype))
            d = {"dtype": _dtype_name(t.dtype), "shape": list(t.shape)}
            if t.is_floating_point():
                d["kind"] = "nonnegative" if t.numel() and bool((t >= 0).all()) else "real"
                structure = _structure(t)
                if structure:
                    d["structure"] = structure
            elif t.dtype == state.torch.bool:
                d["kind"] = "bool"
            else:
                d["kind"] = "index"
                d["low"] = int(t.min()) if t.numel() else 0
                d["high"] = int(t.max()) + 1 if t.numel() else 1
            desc.append(d)
        state.CONSTANTS = [(c["index"], c["value"]) for c in constants]  # this child's calls below too
        rec = OpRecorder(top_level=True)
        with state.torch.no_grad():
            outs = as_outputs(rec.record(lambda: self.model(*with_constants(inputs))))
            as_outputs(self.model64(*with_constants([t.double() if t.is_floating_point() else t for t in inputs])))
        return json.dumps({"inputs": desc, "constants": constants,
                           "outputs": [{"dtype": _dtype_name(o.dtype), "shape": list(o.shape)} for o in outs],
                           "ops": rec.names, "key_ops": key_ops(rec.names), "copied_state": self.copied,
                           "candidate_note": self.candidate_note})

    def run(self, req):
        with cpu_devices():  # a forward that allocates on "cuda" computes on the CPU here
            return self._run(req)

    def _run(self, req):
        rep = new_reply(req["case_id"])
        inputs = [a for a in req["args"] if isinstance(a, state.torch.Tensor)]

        # Outputs are encoded as they are (no copy): both evaluations below run before the encoding,
        # and the second works on clones of the inputs and a model of its own, so nothing changes them.
        def plain(outs):
            return [{"tensor": t.detach().cpu().contiguous(), "device": "cpu", "alias_input": -1,
                     "alias_output": -1, "contiguous": True, "alias_previous_call": -1} for t in outs]
        try:
            with state.torch.no_grad():
                wide = [t.double() if t.is_floating_point() else t for t in inputs]
                rep["calls"].append(plain(as_outputs(self.model64(*with_constants(wide)))))
        except BaseException as e:  # noqa: B902
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                e = RuntimeError("the reference raised %s" % type(e).__name__)
            return exception_reply(rep, e)
        floating = [t.dtype for t in inputs if t.is_floating_point()]
        if floating:
            try:
                with state.torch.no_grad():
                    rep["calls"].append(plain(as_outputs(self.lib_model(floating[0])(*with_constants([t.clone() for t in inputs])))))
            except Exception:  # noqa: B902 - without it the tolerance falls back to its floor
                pass
        return rep


def _structure(t):
    """The structure get_inputs() built into a floating tensor's last two dims, or "": a matrix
    problem's kernels may rely on it (KernelBench's triangular, symmetric and diagonal matmuls)."""
    if t.dim() < 2 or t.size(-1) < 2 or t.size(-2) < 2 or not bool(t.ne(0).any()):
        return ""
    lower, upper = bool(t.equal(t.tril())), bool(t.equal(t.triu()))
    if lower and upper:
        return "diagonal"
    if lower:
        return "lower-triangular"
    if upper:
        return "upper-triangular"
    if t.size(-1) == t.size(-2) and bool(t.equal(t.transpose(-2, -1))):
        return "symmetric"
    return ""

