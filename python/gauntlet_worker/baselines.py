# The timing gate's baselines of a module: its eager Model, torch.compile of it, or the library op.
from . import state
from .cases import as_outputs
from .loading import pick, with_constants

# Baselines (the request's baseline_op): "module:eager" (the module's reference class Model, built
# as the module oracle builds it: get_init_inputs(), seed 0, the candidate's shared weights, in the
# inputs' dtype, on the module's device), "module:compiled" (torch.compile of that Model, where
# torch has it and the child may run its compiler), or an op name (the library op, as the native
# worker's library_baseline.cpp writes it, from the case's full argument list).


def tensor_args(args):
    return [a for a in args if isinstance(a, state.torch.Tensor)]


def module_call_args(args):
    """A module's call arguments from a request's: its tensors, get_inputs()' constants put back."""
    return with_constants(tensor_args(args))


def _library_baselines():
    """library_baseline.cpp's table: one expression per op, the schema's argument order
    (opschemas/<op>.json: inputs, then attributes)."""
    import math
    F = state.torch.nn.functional

    def attention(q, k, v, causal):
        if hasattr(F, "scaled_dot_product_attention"):
            return F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
        s = state.torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(float(q.size(-1)))
        if causal:
            mask = state.torch.ones(q.size(-2), k.size(-2), dtype=state.torch.bool, device=q.device).triu(1)
            s = s.masked_fill(mask, float("-inf"))
        return state.torch.matmul(state.torch.softmax(s, -1), v)

    def rms_norm(a):
        x = a[0]
        return x * state.torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + a[2]) * a[1]

    def segment_sum(a):
        # zeros(S, D).index_add_(0, each row's segment, x), the segment found by searchsorted.
        x, offsets = a[0], a[1].contiguous()
        rows = state.torch.arange(x.size(0), dtype=offsets.dtype, device=offsets.device)
        segment = state.torch.searchsorted(offsets, rows, right=True) - 1
        out = state.torch.zeros(offsets.numel() - 1, x.size(1), dtype=x.dtype, device=x.device)
        return out.index_add_(0, segment, x)

    def sort(a):
        # torch.sort(keys, stable=True): (sorted keys, values permuted alike).
        keys, order = state.torch.sort(a[0], stable=True)
        return keys, a[1][order]

    def hash_join(a):
        # Every (i, j) with left[i] == right[j], by (i, j): right sorted stably (equal keys keep
        # ascending j), each left key's matches found by searchsorted, expanded by repeat_interleave.
        left = a[0].contiguous()
        keys, order = state.torch.sort(a[1].contiguous(), stable=True)
        lo = state.torch.searchsorted(keys, left)
        count = state.torch.searchsorted(keys, left, right=True) - lo
        i = state.torch.repeat_interleave(count)
        first = state.torch.cumsum(count, 0) - count
        pos = state.torch.arange(i.numel(), dtype=i.dtype, device=i.device) - first[i] + lo[i]
        return state.torch.stack((i, order[pos]), 1)

    def int8_matmul(a):
        # (a.int() @ b.int()).float() * a_scale * b_scale; the integer product through float64
        # (exact: |sum| < 2^31 < 2^53), as CUDA's mm has no int32 kernel.
        acc = state.torch.mm(a[0].double(), a[1].double()).int()
        return acc.float() * a[2] * a[3]

    return {
        "add": lambda a: a[0] + a[1],
        "amax": lambda a: a[0].amax(dim=[a[1]]),
        "bmm": lambda a: state.torch.bmm(a[0], a[1]),
        "clamp": lambda a: state.torch.clamp(a[0], a[1], a[2]),
        "conv2d": lambda a: F.conv2d(a[0], a[1], a[2], (a[3], a[3]), (a[4], a[4])),
        "cross_entropy": lambda a: F.nll_loss(state.torch.log_softmax(a[0], 1), a[1]),
        "cumsum": lambda a: state.torch.cumsum(a[0], a[1]),
        # torch.dequantize of the int8 data viewed as a per-tensor qint8 tensor (no copy of x).
        "dequantize": lambda a: state.torch.dequantize(state.torch._make_per_tensor_quantized_tensor(a[0], a[1], a[2])),
        "embedding": lambda a: state.torch.embedding(a[0], a[1]),
        "filter": lambda a: a[0][a[0] > a[1]],
        "gelu": lambda a: F.gelu(a[0]),
        "hash_join": hash_join,
        "int8_matmul": int8_matmul,
        "layer_norm": lambda a: F.layer_norm(a[0], (a[0].size(-1),), a[1], a[2], a[3]),
        "linear_relu": lambda a: state.torch.relu(F.linear(a[0], a[1], a[2])),
        "log_softmax": lambda a: state.torch.log_softmax(a[0], a[1]),
        "logsumexp": lambda a: state.torch.logsumexp(a[0], [a[1]]),
        "matmul": lambda a: state.torch.mm(a[0], a[1]),
        "mean": lambda a: a[0].mean([a[1]]),
        "quantize_per_tensor": lambda a: state.torch.quantize_per_tensor(a[0], a[1], a[2], state.torch.qint8).int_repr(),
        "relu": lambda a: state.torch.relu(a[0]),
        "rms_norm": rms_norm,
        "sdpa": lambda a: attention(a[0], a[1], a[2], a[3]),
        "segment_sum": segment_sum,
        "sort": sort,
        # zeros(G).index_add_(0, keys, values) / zeros(size).index_add_(0, index, x).
        "group_by_sum": lambda a: state.torch.zeros(a[2], dtype=a[1].dtype, device=a[1].device).index_add_(0, a[0], a[1]),
        "scatter_add": lambda a: state.torch.zeros(a[2], dtype=a[0].dtype, device=a[0].device).index_add_(0, a[1], a[0]),
        "sigmoid": lambda a: state.torch.sigmoid(a[0]),
        "softmax": lambda a: state.torch.softmax(a[0], a[1]),
        "sum": lambda a: a[0].sum([a[1]]),
        "topk": lambda a: tuple(state.torch.topk(a[0], a[1], dim=-1)),
        "unique": lambda a: tuple(state.torch.unique(a[0], sorted=True, return_counts=True)),
    }


EAGER, COMPILED = "module:eager", "module:compiled"


def compiled_baseline_unavailable():
    """Why this child cannot time torch.compile(Model), or "" when it can try. The LoadReply's
    signature carries it (a line "no-compiled-baseline: ..."), so the gate starts no child of its
    own for that baseline in vain."""
    if not hasattr(state.torch, "compile"):
        return "torch %s has no torch.compile (it came with torch 2.0): no compiled baseline" % state.torch.__version__
    if state.DEVICE == "cpu" and state.SECCOMP["active"]:
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
        mods = state.LOADED["mods"] or [None, None]
        order = [mods[1], mods[0]]  # Model and get_init_inputs(): the reference module's first
        cls = pick(order, "Model")
        if cls is None:
            raise NoBaseline("the module defines no 'Model' (the eager baseline is the reference class)")
        state.torch.manual_seed(0)
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
        floating = [t.dtype for t in tensor_args(args) if t.is_floating_point()]
        if hasattr(m, "to"):
            own = [p.dtype for p in list(m.parameters()) + list(m.buffers()) if p.is_floating_point()] \
                if hasattr(m, "parameters") else []
            if floating and own and own[0] != floating[0]:
                m = m.to(floating[0])  # the framework's Model in the inputs' dtype
            m = m.to(state.DEVICE)
        return m.eval() if hasattr(m, "eval") else m

    def _build(self, op, args):
        if op == EAGER:
            m = self._model(args)
            return lambda a: as_outputs(m(*module_call_args(a)))
        if op == COMPILED:
            why = compiled_baseline_unavailable()
            if why:
                raise NoBaseline(why)
            try:
                import torch._inductor.config as inductor_config
                inductor_config.compile_threads = 1  # no pool of compile worker processes
            except Exception:  # noqa: BLE001
                pass
            cm = state.torch.compile(self._model(args))
            return lambda a: as_outputs(cm(*module_call_args(a)))
        table = _library_baselines()
        if op not in table:
            raise NoBaseline("no library baseline for op %s" % op)
        fn = table[op]
        return lambda a: as_outputs(fn(a))

    def callee(self, op, args):
        if op not in self.built:
            self.built[op] = self._build(op, args)
        return self.built[op]
