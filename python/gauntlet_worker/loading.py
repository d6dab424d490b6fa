# Loading the module under test: its sources, the entry class built as KernelBench builds it, the build lock.
import os
import sys

from . import state

# The Load's entry "reference:<Model>:<ModelNew>" starts the module oracle's reference role
# (reference.py); "build:<entry>" the module's build step (building.py); "kbcheck:<entry>" the
# field's standard check, KernelBench's own (standard_check.py).
REFERENCE_PREFIX = "reference:"
BUILD_PREFIX = "build:"
STANDARD_CHECK_PREFIX = "kbcheck:"


def split_entry(entry):
    """The Load's entry: the class name, then "|" and a reference module's path when the manifest
    names one ("ModelNew|/runs/level1/23_Softmax.py"): that module supplies Model, get_inputs() and
    get_init_inputs() where the candidate's file lacks them (KernelBench samples define ModelNew only).
    A last line "constants=[...]" (src/schema/manifest.cpp python_load_entry) sets state.CONSTANTS."""
    entry, _, constants = entry.partition("\nconstants=")
    state.CONSTANTS = parse_constants(constants) if constants else []
    if "|" in entry:
        name, ref = entry.split("|", 1)
        return name, ref
    return entry, None


def parse_constants(text):
    """[(position, value)] of a JSON array of {"index", "value"} (ValueError when it is not one)."""
    import json
    out = []
    for c in json.loads(text):
        if not isinstance(c, dict) or not isinstance(c.get("index"), int) or isinstance(c.get("index"), bool) \
                or not isinstance(c.get("value"), (int, float, bool)):
            raise ValueError("a get_inputs() constant is not {index, value}: %r" % (c,))
        out.append((c["index"], c["value"]))
    return sorted(out)


def with_constants(tensors):
    """The call's arguments: the case's tensors, with get_inputs()' fixed non-tensor values (a
    scale, a dim) put back at their positions."""
    args = list(tensors)
    for position, value in state.CONSTANTS:
        args.insert(min(position, len(args)), value)
    return args


def load_source(path, source, name="gauntlet_module"):
    import types
    mod = types.ModuleType(name)
    mod.__file__ = path
    sys.modules[name] = mod
    exec(compile(source, path, "exec"), mod.__dict__)
    return mod


def pick(mods, name):
    """The first of the modules that defines `name` (None when none does)."""
    for m in mods:
        if m is not None and hasattr(m, name):
            return getattr(m, name)
    return None


def use_flock_baton():
    """torch's cpp_extension serializes load_inline builds of one extension with a FileBaton: a lock
    file created with O_EXCL, removed by its holder when the build ends. A builder killed at the
    gate's limit never removes it, and every later child then waits for it forever (seen on the
    H200: one killed nvcc build turned each later gate of the module into a timeout). The same
    protocol on flock(2) ends with its holder, whatever kills it."""
    try:
        import fcntl
        from torch.utils import file_baton
    except Exception:  # noqa: BLE001 - no cpp_extension, nothing to guard
        return

    def try_acquire(self):
        fd = os.open(self.lock_file_path, os.O_CREAT | os.O_RDWR, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self.fd = fd
        return True

    def wait(self):
        try:
            fd = os.open(self.lock_file_path, os.O_CREAT | os.O_RDWR, 0o666)
        except OSError:
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # the builder's end (or death); then load what it built
        finally:
            os.close(fd)

    def release(self):
        try:
            os.remove(self.lock_file_path)
        except OSError:
            pass
        if getattr(self, "fd", None) is not None:
            os.close(self.fd)
            self.fd = None

    file_baton.FileBaton.try_acquire = try_acquire
    file_baton.FileBaton.wait = wait
    file_baton.FileBaton.release = release


def load_module(path, source, entry, ref=None):
    refmod = load_source(ref[0], ref[1], "gauntlet_reference") if ref else None
    mod = load_source(path, source)
    if entry in ("", "forward") and not hasattr(mod, entry or "forward"):
        entry = "ModelNew"  # the command line's default entry ("forward") names no class: KernelBench's
    cls = getattr(mod, entry, None)
    if cls is None:
        raise LookupError("the module defines no '%s'" % entry)
    state.torch.manual_seed(0)
    init = pick([mod, refmod], "get_init_inputs")
    model = cls(*init()) if callable(init) else cls()
    if hasattr(model, "eval"):
        model = model.eval()
    if state.DEVICE == "cuda" and hasattr(model, "to"):
        model = model.to("cuda")  # as KernelBench's eval does: ModelNew(*get_init_inputs()).cuda()
    state.LOADED["mods"] = [mod, refmod]
    return model
