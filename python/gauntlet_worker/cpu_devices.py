# The reference child's CPU world: a module's own `.cuda()` and `device="cuda"` land on the CPU there.
"""The module oracle's reference child is a CPU process (its Model runs in float64 on the CPU, the
SPEC's oracle), and it has no GPU: a CUDA context there would fail under the CPU sandbox's limits
("cudaGetDeviceCount ... Error 304"), and would take a GPU turn from the kernels under test. Yet the
files people write for CUDA kernels build their inputs on the GPU (`get_inputs()` returning
`torch.randn(16, 16384).cuda()`), their Model's constructor moves weights there, and its forward
allocates with `device="cuda"`. Those requests say where the tensors should live, not what they
hold, so in this child they are answered on the CPU: values, shapes and dtypes stay the module's.

One TorchFunctionMode does it: `Tensor.cuda()` returns the tensor, and a CUDA device given to a
factory function, `Tensor.to`, `new_*` or `*_like` (positional or `device=`) becomes the CPU."""
from . import state


def _is_cuda(value):
    torch = state.torch
    if isinstance(value, torch.device):
        return value.type == "cuda"
    if isinstance(value, str):
        return value == "cuda" or value.startswith("cuda:")
    return False


def cpu_devices():
    """A context manager under which CUDA placements stay on the CPU (a fresh mode per use)."""
    torch = state.torch
    from torch.overrides import TorchFunctionMode

    class CpuDevices(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            if func is torch.Tensor.cuda:
                return args[0]
            if _is_cuda(kwargs.get("device")):
                kwargs["device"] = "cpu"
            if func is torch.Tensor.to:
                args = tuple("cpu" if _is_cuda(a) else a for a in args)
            return func(*args, **kwargs)

    return CpuDevices()
