# The module build step: each module's extensions compiled once by its build child, loaded by its gate children.
"""Each Python module's extensions built once, in a directory of its own (docs/modules.md, "Builds").

A module's `torch.utils.cpp_extension.load_inline` / `load` calls are compiled by one build child
per module (content-hashed directory chosen by the parent, src/build/module_build.cpp), never by
its gate children. The build child forces every extension into a directory of the module's own
build tree (keyed by the call's order, never by the extension's name alone: KernelBench solutions
call theirs `matmul`, `matmul_cuda`, ... by the dozen) and reports what it built. Gate children
import exactly those products and never compile, so no kernel can load another kernel's build and
no gate child runs a compiler.
"""
import importlib.util
import inspect
import json
import os
import re
import shutil
import sys

from . import light_headers
from .pch import cxx_compiler, header_compiler, safe_variant_flags, variant_key

RECORD = "gauntlet-build.json"  # written by the parent, from the build child's reply
# Where a build call's light torch headers for nvcc are written, inside its build directory.
LIGHT_HEADERS_DIR = "gauntlet-light-torch"
# A CUDA unit that binds its functions itself needs pybind11 and torch's Python glue: not offered.
_BINDS_ITSELF = ("PYBIND11_MODULE", "pybind11", "Python.h", "torch/python.h", "TORCH_LIBRARY")


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


def first_error_line(error):
    lines = error_lines(error, limit=1).splitlines()
    return lines[0].strip()[:200] if lines else type(error).__name__


def _pch_rejected(error):
    # -Werror=invalid-pch: g++'s diagnostic (bracketed, unlike the flag on the command line that
    # every failed build's message repeats) says it could not take the .gch: the module's own flags
    # differ from the header's. Any other failure is the module's, and is not compiled twice.
    text = str(error)
    return "[-Werror=invalid-pch]" in text or "PCH files were found, but they were invalid" in text


def _failed_units(error):
    """The object files ninja names as failed in a torch build error ("FAILED: cuda.cuda.o")."""
    return re.findall(r"FAILED: (\S+)", str(error))


def _bound_call(original, name, args, kwargs):
    """The call's arguments by name, or None where they cannot be bound (left for torch to refuse)."""
    try:
        sig = inspect.signature(original)
        if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in sig.parameters.values()):
            return None
        call = dict(sig.bind(name, *args, **kwargs).arguments)
    except (TypeError, ValueError):
        return None
    call.pop("name", None)
    return call


def _cuda_texts(fn_name, call):
    """The CUDA sources of a load_inline/load call, as text ([] when it compiles none)."""
    if fn_name == "load_inline":
        sources = call.get("cuda_sources") or []
        return [sources] if isinstance(sources, str) else [s for s in sources if isinstance(s, str)]
    texts = []
    sources = call.get("sources") or []
    for path in [sources] if isinstance(sources, str) else sources:
        if isinstance(path, str) and path.endswith((".cu", ".cuh")):
            try:
                with open(path, "r", encoding="utf-8", errors="replace") as f:
                    texts.append(f.read())
            except OSError:
                return []  # torch will say the file is missing
    return texts


def with_light_cuda_headers(fn_name, call, where):
    """(call, why) for the bound call with nvcc shown light torch headers written for its CUDA
    sources (light_headers.py) first, or (None, why not). nvcc parses torch's headers three times
    (docs/modules.md, "Where a load_inline build's time goes"); the light ones cut that to a
    fraction, and a unit they do not compile is built again with torch's own, so they change the
    time of a build, never its outcome."""
    if os.environ.get("GAUNTLET_LIGHT_CUDA_HEADERS", "1") == "0":
        return None, "off (GAUNTLET_LIGHT_CUDA_HEADERS=0)"
    if call is None:
        return None, "not tried: the call's arguments did not bind"
    texts = _cuda_texts(fn_name, call)
    if not texts:
        return None, ""
    if any(marker in t for t in texts for marker in _BINDS_ITSELF):
        return None, "not tried: a CUDA source binds its functions itself"
    flags = call.get("extra_cuda_cflags") or []
    if not isinstance(flags, (list, tuple)) or not all(isinstance(f, str) for f in flags):
        return None, "not tried: extra_cuda_cflags is not a list of strings"
    light = dict(call)
    headers = light_headers.write(os.path.join(where, LIGHT_HEADERS_DIR), texts)
    light["extra_cuda_cflags"] = ["-I" + headers] + list(flags)
    return light, "tried (%s)" % light_headers.summary(texts)


class Recorder:
    """Build role: each load_inline/load call builds into <build>/ext/<index>-<name>. A load_inline
    call's C++ unit is offered the precompiled torch/extension.h (pch.py) when the parent built one."""

    def __init__(self, build_dir, pch_headers=None):
        self.build_dir = build_dir
        self.pch_headers = pch_headers or {}
        self.pch_wanted = set()  # variants (the module's own C++ flags) no header was built for yet
        self.pch_mismatch = ""   # why a header was not offered to this build's compiler
        self.compiler = None     # the C++ compiler torch uses here (found once)
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

    def _with_pch(self, call):
        """The bound load_inline call with `-include` of the precompiled header added to its C++
        flags, or None where it does not apply: no header, a call torch would refuse anyway (left
        for torch to say why), or no_implicit_headers (torch/extension.h is then not main.cpp's
        first line, and including it first could change what the module's code means)."""
        if not self.pch_headers:
            return None  # none built, or GAUNTLET_PCH=0: nothing offered, nothing asked for
        if call is None or call.get("no_implicit_headers"):
            return None
        own = list(call.get("extra_cflags") or [])
        if not all(isinstance(f, str) for f in own):
            return None
        meant = [f for f in own if f.strip()]  # KernelBench's template passes [""]: no flag at all
        header = self.pch_headers.get(variant_key(meant))
        if header is None:
            if safe_variant_flags(meant) is not None:
                self.pch_wanted.add(variant_key(meant))
            return None
        if self.compiler is None:
            self.compiler = cxx_compiler()
        made_by = header_compiler(header)
        if not made_by or made_by != self.compiler:
            # g++ would refuse the .gch and torch would then build the whole extension twice.
            self.pch_mismatch = "header made by %s, this build's compiler is %s" % (made_by or "?", self.compiler or "?")
            return None
        with_pch = dict(call)
        with_pch["extra_cflags"] = ["-include", header, "-Werror=invalid-pch"] + own
        if with_pch.get("use_pch"):
            with_pch["use_pch"] = False  # torch's own .gch goes into torch's install, which is read-only here
        return with_pch

    def _build(self, fn_name, original, name, args, kwargs, where):
        """Builds one call: its C++ unit with the precompiled header and its CUDA unit with the
        light headers where they apply (one torch call, the two units side by side as torch builds
        them), then without what failed. Returns (result, pch state, light-header state)."""
        call = _bound_call(original, name, args, kwargs)
        if call is not None and call.get("verbose"):
            # verbose=True (most KernelBench solutions) prints the compiler's output to a stdout nobody
            # reads; without it torch puts that output in its error: the build-error's evidence.
            call["verbose"] = False
        wanted = len(self.pch_wanted)
        pch_call = self._with_pch(call) if fn_name == "load_inline" else None
        pch = "not offered"
        if len(self.pch_wanted) > wanted:
            pch = "no header for its flags yet (an audit builds one for the modules after it)"
        elif self.pch_mismatch:
            pch = "not offered: " + self.pch_mismatch
        light_call, light = with_light_cuda_headers(fn_name, pch_call or call, where)
        while pch_call is not None or light_call is not None:
            try:
                result = original(name, **(light_call or pch_call))
                return (result, "used" if pch_call is not None else pch,
                        light.replace("tried", "used", 1) if light_call is not None else light)
            except Exception as e:  # noqa: BLE001 - what failed is tried again without it
                shutil.rmtree(where, ignore_errors=True)
                os.makedirs(where, exist_ok=True)
                failed = _failed_units(e)
                main_only = bool(failed) and all(u.startswith("main") for u in failed)
                cuda_only = bool(failed) and not any(u.startswith("main") for u in failed)
                if pch_call is not None and (_pch_rejected(e) or main_only):
                    # The C++ unit alone failed: without the header, torch's own text decides.
                    pch = ("rejected by g++ (the module's own flags): built without it" if _pch_rejected(e) else
                           "failed (%s): built again without it" % first_error_line(e))
                    pch_call = None
                    if light_call is not None:
                        light_call, light = with_light_cuda_headers(fn_name, call, where)
                elif light_call is not None:
                    # The light headers may lack what the unit needs, or the unit is wrong: torch's
                    # own headers decide.
                    light, light_call = "failed (%s): built again with torch's headers" % first_error_line(e), None
                elif cuda_only:
                    raise  # torch's own headers for the CUDA unit, and it failed: the module's error
                else:
                    pch, pch_call = "failed (%s): built again without it" % first_error_line(e), None
        return (original(name, **call) if call is not None else original(name, *args, **kwargs)), pch, light

    def _wrap(self, fn_name, original):
        def build(name, *args, **kwargs):
            index = len(self.built)
            where = os.path.join(self.build_dir, "ext", "%d-%s" % (index, name))
            os.makedirs(where, exist_ok=True)
            kwargs["build_directory"] = where  # never the kernel's own choice, never a shared one
            try:
                result, pch, light_state = self._build(fn_name, original, name, args, kwargs, where)
            except BaseException as e:  # noqa: B902
                self.failed = "%s('%s'): %s" % (fn_name, name, e)
                # Whose fault: the compiler's errors, or the call's own arguments, are the module's;
                # anything else (the CUDA driver refusing the child, a missing toolchain) is not.
                self.failed_kind = ("compile" if "Error building extension" in str(e) else
                                    "call" if isinstance(e, (TypeError, ValueError, KeyError)) else "harness")
                raise
            python_module = kwargs.get("is_python_module", True)
            self.built.append({"call": fn_name, "name": name, "dir": where, "python_module": bool(python_module),
                               "file": getattr(result, "__file__", None) if python_module else result,
                               "pch": pch, "light_cuda_headers": light_state})
            return result
        return build

    def reply(self):
        torch = sys.modules.get("torch")
        return json.dumps({"extensions": self.built, "torch": getattr(torch, "__version__", ""),
                           "pch_wanted": sorted(self.pch_wanted)})


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
    # The file the build made: torch names a rebuild in the same process <name>_v1 (a build retried
    # without the precompiled header), and the module's init symbol follows the file's name.
    path = entry.get("file") if isinstance(entry.get("file"), str) else os.path.join(entry["dir"], entry["name"] + _lib_ext())
    if not entry.get("python_module", True):
        import torch
        torch.ops.load_library(path)
        return path
    spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
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
