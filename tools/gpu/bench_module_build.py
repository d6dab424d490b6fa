#!/usr/bin/env python3
# Where a KernelBench-style load_inline build spends its time, and what each way of cutting it saves.
"""Benchmark of one small `load_inline` CUDA module's build (issue 15, item 2), run on the GPU machine.

Measures, in one run on one machine (so the ratios hold):
  * `import torch` in a fresh interpreter (the floor under any module child's start);
  * torch's own cold `load_inline` (ninja, two translation units side by side, then the link);
  * each of its compile commands alone (`ninja -t commands`), nvcc with `-time` for its phases;
  * the C++ unit with a precompiled torch/extension.h (built once per toolchain, then reused);
  * a whole cold load_inline as gauntlet's build child runs it (light headers written for the
    CUDA source, the precompiled header for main.cpp), three distinct sources, the median;
  * the CUDA unit with host optimisation lowered;
  * K cold builds at once (a corpus's build lane), torch's way;
  * an unchanged module loaded again (torch's versioner: no compile) and a fresh child's import of
    the built .so.
Writes OUTDIR/module-build.json, each figure as soon as it is measured (a run cut short keeps them).
"""
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from gauntlet_worker import light_headers  # noqa: E402
from gauntlet_worker.pch import header_flags  # noqa: E402

CUDA_SRC = textwrap.dedent(r"""
    #include <torch/extension.h>
    #include <cuda_runtime.h>

    __global__ void scale_add_kernel(const float* a, const float* b, float* out, float s, int64_t n) {
        int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
        if (i < n) out[i] = a[i] * s + b[i];
    }

    torch::Tensor scale_add_cuda(torch::Tensor a, torch::Tensor b, double s) {
        auto out = torch::empty_like(a);
        int64_t n = a.numel();
        int threads = 256;
        int blocks = (int)((n + threads - 1) / threads);
        scale_add_kernel<<<blocks, threads>>>(a.data_ptr<float>(), b.data_ptr<float>(),
                                              out.data_ptr<float>(), (float)s, n);
        return out;
    }
""")
CPP_SRC = "torch::Tensor scale_add_cuda(torch::Tensor a, torch::Tensor b, double s);"
# BENCH_CPU=1: a C++-only module (no nvcc steps), to check this script on a machine without CUDA.
CPU_ONLY = os.environ.get("BENCH_CPU") == "1"
CPU_SRC = textwrap.dedent(r"""
    #include <torch/extension.h>
    torch::Tensor scale_add_cuda(torch::Tensor a, torch::Tensor b, double s) { return a * s + b; }
""")


def build_script(name, build_dir, salt, light_dir=None, pch_header=None):
    # `salt` makes each source distinct, as a corpus's kernels are (no cache can share them).
    # `light_dir`: nvcc sees gauntlet's light torch headers first, as the build child gives them;
    # `pch_header`: main.cpp reads the precompiled torch/extension.h, as the build child offers it.
    flags = ["-I" + light_dir] if light_dir else []
    cflags = ["-include", pch_header, "-Werror=invalid-pch"] if pch_header else []
    return textwrap.dedent(f"""
        import time, torch
        from torch.utils.cpp_extension import load_inline
        t = time.time()
        m = load_inline(name={name!r}, cpp_sources={(CPU_SRC + '// ' + salt) if CPU_ONLY else CPP_SRC!r},
                        cuda_sources={None if CPU_ONLY else CUDA_SRC + '// ' + salt!r},
                        functions=["scale_add_cuda"], build_directory={build_dir!r}, verbose=False,
                        extra_cuda_cflags={flags!r}, extra_cflags={cflags!r})
        print("LOAD_S", time.time() - t)
    """)


def run_python(code, env=None):
    t = time.time()
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    wall = time.time() - t
    if p.returncode != 0:
        raise RuntimeError("python failed:\n" + p.stdout[-2000:] + p.stderr[-4000:])
    load = [float(l.split()[1]) for l in p.stdout.splitlines() if l.startswith("LOAD_S")]
    return wall, (load[0] if load else None)


def timed(cmd, cwd):
    t = time.time()
    p = subprocess.run(cmd, cwd=cwd, shell=True, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("failed: %s\n%s" % (cmd, (p.stdout + p.stderr)[-3000:]))
    return time.time() - t


def ninja_commands(build_dir):
    out = subprocess.run(["ninja", "-t", "commands"], cwd=build_dir, capture_output=True, text=True, check=True).stdout
    cmds = [l for l in out.splitlines() if l.strip()]
    cxx = next(c for c in cmds if "main.cpp" in c and " -c " in c)
    nvcc = next((c for c in cmds if "cuda.cu" in c), "true")
    link = next(c for c in cmds if " -shared" in c or "-shared " in c)
    return cxx, nvcc, link


def nvcc_phases(csv_path):
    phases = {}
    try:
        with open(csv_path, encoding="utf-8") as f:
            for line in f:
                parts = [p.strip() for p in line.split(",")]
                # source file name, phase name, phase input, output, arch, tool, metric (ms)
                if len(parts) >= 7 and parts[-1].replace(".", "", 1).isdigit():
                    phases[parts[1]] = phases.get(parts[1], 0.0) + float(parts[-1]) / 1000.0
    except OSError:
        pass
    return phases


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "."
    parallel = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    os.makedirs(out_dir, exist_ok=True)
    root = tempfile.mkdtemp(prefix="gauntlet-build-bench-")
    env = dict(os.environ, TORCH_EXTENSIONS_DIR=os.path.join(root, "torch_extensions"))
    r = {"cores": os.cpu_count()}
    json_path = os.path.join(out_dir, "module-build.json")

    def record(key, value):
        # Every figure is written as soon as it is measured: a run cut short keeps what it had.
        r[key] = value
        with open(json_path, "w", encoding="utf-8") as f:
            json.dump(r, f, indent=1)
        if not key.endswith("_cmd"):
            print(key, value if not isinstance(value, float) else round(value, 2), flush=True)

    record("import_torch_s", min(run_python("import torch")[0] for _ in range(2)))

    # 1. torch's own cold build; its commands (ninja -t commands) are then timed one by one.
    cold = os.path.join(root, "cold")
    os.makedirs(cold)
    wall, load = run_python(build_script("scale_add", cold, "cold"), env)
    record("torch_cold_wall_s", wall)
    record("torch_cold_load_s", load)
    so = os.path.join(cold, "scale_add.so")
    record("child_import_so_s", min(run_python(textwrap.dedent(f"""
        import time, torch, importlib.util
        t = time.time()
        spec = importlib.util.spec_from_file_location("scale_add", {so!r})
        m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
        print("LOAD_S", time.time() - t)
    """), env)[1] for _ in range(2)))
    cxx, nvcc, link = ninja_commands(cold)
    record("cxx_cmd", cxx)
    record("nvcc_cmd", nvcc)
    record("link_cmd", link)
    if os.environ.get("BENCH_STEPS") != "light":  # nvcc's phases, measured before (docs/modules.md)
        csv = os.path.join(root, "nvcc-time.csv")
        record("nvcc_timed_s", timed(nvcc + " -time " + shlex.quote(csv), cold))
        record("nvcc_phases_s", nvcc_phases(csv))
        try:
            record("nvcc_time_csv_cmd", open(csv, encoding="utf-8").read()[:4000])
        except OSError:
            pass
    light_dir = None
    if not CPU_ONLY:
        # 1b. The CUDA unit with the light torch headers the build child writes for its source.
        light_dir = light_headers.write(os.path.join(root, "light-headers"), [CUDA_SRC])
        record("nvcc_light_headers_s", timed(nvcc + " -I" + shlex.quote(light_dir), cold))

    # 2. The C++ unit with a precompiled torch/extension.h: the flags of the cxx command, less
    # its in/out, compile a header that includes it; main.cpp then starts from the PCH.
    pch_dir = os.path.join(root, "pch")
    os.makedirs(pch_dir)
    header = os.path.join(pch_dir, "gauntlet_torch_extension.h")
    with open(header, "w", encoding="utf-8") as f:
        f.write("#pragma once\n#include <torch/extension.h>\n")
    compiler, flags = header_flags(cxx)  # the worker's own: the header gauntlet builds is this one
    pch_cmd = " ".join([shlex.quote(compiler)] + [shlex.quote(f) for f in flags] +
                       ["-x", "c++-header", shlex.quote(header), "-o", shlex.quote(header + ".gch")])
    record("pch_cmd", pch_cmd)
    record("pch_build_s", timed(pch_cmd, pch_dir))
    record("pch_bytes", os.path.getsize(header + ".gch"))
    t = time.time()
    p = subprocess.run(cxx + " -include " + shlex.quote(header) + " -Winvalid-pch -H", cwd=cold, shell=True,
                       capture_output=True, text=True)
    record("cxx_with_pch_s", time.time() - t)
    # -H lists each header read; with the PCH taken, the first line is the .gch ('! ...gch').
    record("pch_used", p.returncode == 0 and ".gch" in p.stderr.splitlines()[0] if p.stderr else False)
    record("pch_stderr_head_cmd", p.stderr[:600])

    # 2b. A whole cold load_inline as gauntlet's build child runs it: light headers for cuda.cu, the
    # precompiled header for main.cpp, both units side by side. Three distinct sources, one at a time.
    loads = []
    for k in range(3):
        d = os.path.join(root, "gauntlet%d" % k)
        os.makedirs(d)
        loads.append(run_python(build_script("scale_add_g%d" % k, d, "g%d" % k, light_dir, header), env)[1])
    record("gauntlet_cold_load_s", sorted(loads))
    record("gauntlet_cold_load_median_s", sorted(loads)[1])
    if os.environ.get("BENCH_STEPS") == "light":
        shutil.rmtree(root, ignore_errors=True)
        return  # BENCH_STEPS=light: the light-header and precompiled-header steps, nothing after
    record("cxx_alone_s", timed(cxx, cold))
    record("link_alone_s", timed(link, cold))

    # 3. The CUDA unit with the host compiler's optimisation lowered (device code unchanged).
    record("nvcc_host_O0_s", timed(nvcc + " -Xcompiler -O0", cold))
    record("nvcc_host_O1_s", timed(nvcc + " -Xcompiler -O1", cold))

    # 4. K distinct cold builds at once, torch's way.
    procs = []
    t0 = time.time()
    for k in range(parallel):
        d = os.path.join(root, "par%d" % k)
        os.makedirs(d)
        procs.append(subprocess.Popen([sys.executable, "-c", build_script("scale_add_%d" % k, d, "par%d" % k)],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    loads = []
    for p in procs:
        o, _ = p.communicate()
        loads += [float(l.split()[1]) for l in o.splitlines() if l.startswith("LOAD_S")]
    record("parallel_k", parallel)
    record("parallel_wall_s", time.time() - t0)
    record("parallel_load_s", sorted(loads))
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
