# A precompiled torch/extension.h for load_inline's C++ unit: built once per toolchain, offered to every build.
"""The torch/extension.h precompiled header (docs/modules.md, "Builds").

Every `load_inline` C++ unit (main.cpp) starts with `#include <torch/extension.h>`, and parsing that
header is most of its compile: 18.7 s of g++ on the H200 host, 7.5 s with this header precompiled
(tools/gpu/bench_module_build.py). torch's own `use_pch` writes its .gch into torch's install, which
a sandboxed build child cannot write; so gauntlet builds its own, once per toolchain, in a directory
of the module build root, and a build child passes `-include <this header>` to g++, which then
reads the .gch instead of the text.

Built by the parent (`python3 -m gauntlet_worker.pch OUT_DIR cpu|cuda`), outside any sandbox: only
this file, torch and the compiler run, never a kernel's code. The flags are exactly those torch
gives main.cpp (read from the build.ninja torch writes for a throwaway extension), less the
extension's name, which torch/extension.h does not read: one header serves every extension. GCC
takes a .gch only when the flags it was made with are compatible, and otherwise reads the header's
text (same result, no gain), so a module with flags of its own (-O3) is built correctly either way.

Variants: a module's own `extra_cflags` (KernelBench solutions often pass -O3) change what g++
accepts, so a build whose flags have no header yet says so (`pch_wanted`), and the parent then
builds a header with those flags added, for the modules after it. Those flags are the kernel's
words run outside the sandbox, so only flags that change code generation or macros are taken
(safe_variant_flags): no plugin, no file written or read, no other program.
"""
import re
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

HEADER = "gauntlet_torch_extension.h"
RECORD = "gauntlet-pch.json"  # in a module's build directory: {"headers": {variant: header}} offered
MAX_VARIANT_FLAGS = 8
# Flags a header variant may be built with: optimisation, language level, macros, target and
# code-generation switches, warnings. Everything else (-fplugin, -fprofile-*, -B, -wrapper, @file,
# -o, -include, paths) is refused: no variant, the module just builds without a header.
_SAFE_FLAG = re.compile(r"^(-O[0-3sgz]?|-Ofast|-std=(c|gnu)\+\+[0-9a-z]{2}|-[DU][A-Za-z_][A-Za-z0-9_]{0,62}(=[A-Za-z0-9_.+-]{0,62})?"
                        r"|-m(arch|tune)=[a-z0-9_.-]{1,32}|-m[a-z0-9][a-z0-9.-]{0,31}|-w|-W[a-z0-9=+-]{1,48}|-g[0-3]?"
                        r"|-f(openmp|fast-math|no-fast-math|no-math-errno|unroll-loops|strict-aliasing|no-strict-aliasing"
                        r"|omit-frame-pointer|no-omit-frame-pointer|exceptions|no-exceptions|rtti|no-rtti|vectorize|tree-vectorize"
                        r"|finite-math-only|no-finite-math-only))$")


def variant_key(flags):
    """The key of the header variant for a module's extra_cflags ("" for none)."""
    return " ".join(flags)


def safe_variant_flags(flags):
    """`flags` as a list when every one may go into a header variant, else None."""
    if not isinstance(flags, (list, tuple)) or len(flags) > MAX_VARIANT_FLAGS:
        return None
    if not all(isinstance(f, str) and _SAFE_FLAG.match(f) for f in flags):
        return None
    return list(flags)


class _Stop(Exception):
    pass


def _main_cpp_command(work, cuda):
    """g++'s command line for a load_inline main.cpp, as torch writes it on this machine."""
    from torch.utils import cpp_extension
    kwargs = dict(name="gauntlet_pch_probe", cpp_sources="int gauntlet_pch_probe() { return 0; }",
                  functions=["gauntlet_pch_probe"], build_directory=work, verbose=False)
    if cuda:
        kwargs["cuda_sources"] = "__global__ void gauntlet_pch_probe_kernel() {}"
    original = getattr(cpp_extension, "_run_ninja_build", None)

    def stop(*_a, **_k):
        raise _Stop()
    if original is not None:
        cpp_extension._run_ninja_build = stop  # build.ninja is written; nothing need compile
    try:
        cpp_extension.load_inline(**kwargs)
    except _Stop:
        pass
    finally:
        if original is not None:
            cpp_extension._run_ninja_build = original
    out = subprocess.run(["ninja", "-t", "commands"], cwd=work, capture_output=True, text=True, check=True).stdout
    return next(l for l in out.splitlines() if "main.cpp" in l and " -c " in l)


def header_flags(command):
    """The compile flags of `command` less its source, object, depfile and extension name."""
    words = shlex.split(command)
    flags, drop_next = [], False
    for w in words[1:]:
        if drop_next:
            drop_next = False
        elif w in ("-c", "-o", "-MF"):
            drop_next = True
        elif w not in ("-MMD", "-MD") and not w.startswith("-DTORCH_EXTENSION_NAME"):
            flags.append(w)
    return words[0], flags


def build(out_dir, cuda, extra=()):
    """Builds OUT_DIR/{HEADER, HEADER.gch, flags.json} atomically, with the variant's `extra`
    flags after torch's; returns the record."""
    extra = safe_variant_flags(list(extra))
    if extra is None:
        raise ValueError("flags outside what a header variant may be built with")
    t0 = time.time()
    parent = os.path.dirname(os.path.abspath(out_dir))
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".pch-", dir=parent)
    try:
        work = os.path.join(tmp, "probe")
        os.makedirs(work)
        compiler, flags = header_flags(_main_cpp_command(work, cuda))
        header = os.path.join(tmp, HEADER)
        with open(header, "w", encoding="utf-8") as f:
            f.write("#pragma once\n#include <torch/extension.h>\n")
        cmd = [compiler] + flags + extra + ["-x", "c++-header", header, "-o", header + ".gch"]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError("the precompiled header did not build: " + (p.stderr or p.stdout)[-800:])
        shutil.rmtree(work, ignore_errors=True)
        record = {"compiler": compiler, "flags": flags, "extra": extra, "variant": variant_key(extra), "cuda": cuda,
                  "seconds": round(time.time() - t0, 2),
                  "bytes": os.path.getsize(header + ".gch")}
        with open(os.path.join(tmp, "flags.json"), "w", encoding="utf-8") as f:
            json.dump(record, f, indent=1)
        for root, dirs, files in os.walk(tmp):
            for name in dirs + files:
                os.chmod(os.path.join(root, name), 0o755 if name in dirs else 0o644)
        os.chmod(tmp, 0o755)
        os.rename(tmp, out_dir)  # a reader sees the whole directory or none of it
        return record
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def cxx_compiler():
    """The C++ compiler torch's builds use in this process, as a path ("" when not found)."""
    try:
        from torch.utils import cpp_extension
        name = cpp_extension.get_cxx_compiler() if hasattr(cpp_extension, "get_cxx_compiler") else None
    except Exception:  # noqa: BLE001
        name = None
    name = name or os.environ.get("CXX", "c++")
    found = shutil.which(name)
    return os.path.realpath(found) if found else ""


def header_compiler(header):
    """The compiler a header was made with (its flags.json), as a path, or ""."""
    try:
        with open(os.path.join(os.path.dirname(header), "flags.json"), "r", encoding="utf-8") as f:
            name = json.load(f).get("compiler", "")
    except (OSError, ValueError, AttributeError):
        return ""
    found = shutil.which(name) if isinstance(name, str) and name else None
    return os.path.realpath(found) if found else ""


def offered_headers(build_dir):
    """{variant: header} the parent offered this build (RECORD in its build directory)."""
    try:
        with open(os.path.join(build_dir, RECORD), "r", encoding="utf-8") as f:
            headers = json.load(f).get("headers", {})
    except (OSError, ValueError, AttributeError):
        return {}
    if not isinstance(headers, dict):
        return {}
    return {k: h for k, h in headers.items() if isinstance(k, str) and isinstance(h, str) and os.path.isfile(h + ".gch")}


def main(argv):
    if len(argv) < 3 or argv[2] not in ("cpu", "cuda"):
        sys.stderr.write("usage: gauntlet_pyworker.py --pch OUT_DIR cpu|cuda [FLAG...]\n")
        return 2
    # The build child's environment, not the parent's: g++ takes a .gch only from the very compiler
    # that made it, and torch picks the compiler from CXX and PATH. On the H200 host the parent's
    # PATH found /opt/gcc's g++ while a build child's scrubbed PATH finds /usr/bin/c++: a header
    # made here with the parent's would be refused by every build (seen there).
    child_path = [os.path.dirname(sys.executable), "/usr/local/bin", "/usr/local/cuda/bin", "/usr/bin", "/bin"]
    try:
        import ninja
        child_path.insert(0, ninja.BIN_DIR)
    except Exception:  # noqa: BLE001
        pass
    keep = {k: os.environ[k] for k in ("LD_LIBRARY_PATH",) if k in os.environ}
    os.environ.clear()
    os.environ.update(keep, PATH=":".join(child_path), HOME="/tmp", LANG="C")
    try:
        record = build(argv[1], argv[2] == "cuda", argv[3:])
    except Exception as e:  # noqa: BLE001 - one line for the parent's build log
        sys.stderr.write("%s: %s\n" % (type(e).__name__, str(e).replace("\n", " ")[:900]))
        return 1
    print(json.dumps(record))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
