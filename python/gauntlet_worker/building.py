# The module build step: each module's extensions compiled once by its build child, loaded by its gate children.
"""Each Python module's extensions built once, in a directory of its own (docs/modules.md, "Builds").

A module's `torch.utils.cpp_extension.load_inline` / `load` calls are compiled by one build child
per module (content-hashed directory chosen by the parent, src/parent/module_build.cpp), never by
its gate children. The build child forces every extension into a directory of the module's own
build tree (keyed by the call's order, never by the extension's name alone: KernelBench solutions
call theirs `matmul`, `matmul_cuda`, ... by the dozen) and reports what it built. Gate children
import exactly those products and never compile, so no kernel can load another kernel's build and
no gate child runs a compiler.
"""
import importlib.util
import json
import os
import shutil
import sys

RECORD = "gauntlet-build.json"  # written by the parent, from the build child's reply


class ExtensionsNotBuilt(RuntimeError):
    """A gate child met a build call the build step did not see (e.g. load_inline inside forward)."""


def _cpp_extension():
    try:
        from torch.utils import cpp_extension
        return cpp_extension
    except Exception:  # noqa: BLE001 - no cpp_extension, nothing to hook
        return None


def _lib_ext():
    return ".pyd" if sys.platform == "win32" else ".so"


def error_lines(text, limit=12):
    """The compiler's first error lines of a failed build's message (the build-error evidence)."""
    lines = [l.rstrip() for l in str(text).splitlines()]
    picked = [l for l in lines if ("error:" in l.lower() or "error " in l.lower()[:12]) and not l.startswith("[")
              and "Error building extension" not in l]
    return "\n".join((picked or lines)[:limit])


class Recorder:
    """Build role: each load_inline/load call builds into <build>/ext/<index>-<name>."""

    def __init__(self, build_dir):
        self.build_dir = build_dir
        self.built = []
        self.failed = None  # the message of a build call that raised
        self.failed_kind = ""

    def install(self):
        cpp = _cpp_extension()
        if cpp is None:
            return
        for fn_name in ("load_inline", "load"):
            original = getattr(cpp, fn_name, None)
            if original is not None:
                setattr(cpp, fn_name, self._wrap(fn_name, original))

    def _wrap(self, fn_name, original):
        def build(name, *args, **kwargs):
            index = len(self.built)
            where = os.path.join(self.build_dir, "ext", "%d-%s" % (index, name))
            os.makedirs(where, exist_ok=True)
            kwargs["build_directory"] = where  # never the kernel's own choice, never a shared one
            try:
                result = original(name, *args, **kwargs)
            except BaseException as e:  # noqa: B902
                self.failed = "%s('%s'): %s" % (fn_name, name, e)
                # Whose fault: the compiler's errors, or the call's own arguments, are the module's;
                # anything else (the CUDA driver refusing the child, a missing toolchain) is not.
                self.failed_kind = ("compile" if "Error building extension" in str(e) else
                                    "call" if isinstance(e, (TypeError, ValueError, KeyError)) else "harness")
                raise
            python_module = kwargs.get("is_python_module", True)
            self.built.append({"call": fn_name, "name": name, "dir": where, "python_module": bool(python_module),
                               "file": getattr(result, "__file__", None) if python_module else result})
            return result
        return build

    def reply(self):
        torch = sys.modules.get("torch")
        return json.dumps({"extensions": self.built, "torch": getattr(torch, "__version__", "")})


class Prebuilt:
    """Gate role: each load_inline/load call, in the order the build child saw them, imports what
    the build child made; a call it never saw raises (or, where the child may run a compiler,
    builds privately in this child's /tmp)."""

    def __init__(self, build_dir, may_compile):
        self.build_dir = build_dir
        self.may_compile = may_compile
        self.calls = 0
        with open(os.path.join(build_dir, RECORD), "r", encoding="utf-8") as f:
            self.record = json.load(f)

    def install(self):
        cpp = _cpp_extension()
        if cpp is None:
            return
        for fn_name in ("load_inline", "load"):
            original = getattr(cpp, fn_name, None)
            if original is not None:
                setattr(cpp, fn_name, self._wrap(fn_name, original))

    def _wrap(self, fn_name, original):
        def load_prebuilt(name, *args, **kwargs):
            index = self.calls
            self.calls += 1
            built = self.record.get("extensions", [])
            if index < len(built) and built[index]["name"] == name and built[index]["call"] == fn_name:
                return _import_built(built[index])
            if self.may_compile:
                where = os.path.join("/tmp", "gauntlet-late-build", "%d-%s" % (index, name))
                os.makedirs(where, exist_ok=True)
                kwargs["build_directory"] = where
                return original(name, *args, **kwargs)
            raise ExtensionsNotBuilt(
                "%s('%s') was not built in the module's build step (gauntlet builds the extensions a module "
                "compiles while it is imported and constructed; this call came later, e.g. from forward)"
                % (fn_name, name))
        return load_prebuilt


def _import_built(entry):
    path = os.path.join(entry["dir"], entry["name"] + _lib_ext())
    if not entry.get("python_module", True):
        import torch
        torch.ops.load_library(path)
        return path
    spec = importlib.util.spec_from_file_location(entry["name"], path)
    if spec is None or spec.loader is None:
        raise ExtensionsNotBuilt("the build of '%s' is missing (%s)" % (entry["name"], path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cache_env(build_dir, building):
    """The compilers' cache variables. Building: inside the module's build directory. A gate
    child: its private /tmp (nothing there outlives it or is seen by another child); a Triton
    cache the build left is copied in after the sandbox is up (seed_private_caches)."""
    if building:
        return {"TORCH_EXTENSIONS_DIR": os.path.join(build_dir, "torch_extensions"),
                "TRITON_CACHE_DIR": os.path.join(build_dir, "triton_cache"),
                "TORCHINDUCTOR_CACHE_DIR": "/tmp/gauntlet-inductor-cache"}
    return {"TORCH_EXTENSIONS_DIR": "/tmp/gauntlet-torch-extensions",
            "TRITON_CACHE_DIR": "/tmp/gauntlet-triton-cache",
            "TORCHINDUCTOR_CACHE_DIR": "/tmp/gauntlet-inductor-cache"}


def seed_private_caches(build_dir):
    """A gate child's Triton cache starts as a copy of the build's (read-only there)."""
    src = os.path.join(build_dir, "triton_cache") if build_dir else ""
    if src and os.path.isdir(src):
        try:
            shutil.copytree(src, os.environ["TRITON_CACHE_DIR"], dirs_exist_ok=True)
        except (OSError, shutil.Error):
            pass  # a cold cache only costs the child a Triton compile
