# Checks the build child's light CUDA headers (python/gauntlet_worker/building.py): who is offered them, the fallback, a real nvcc compile.
"""Run by tests/e2e/module_build_test.cpp (ModuleBuilds.CudaUnitsGetTheLightTorchHeadersAndFallBackToTorchsOwn) with PYTHONPATH=<source>/python; prints "ok" or fails.

A fake load_inline stands in for torch's (no CUDA torch here): it records the flags it was given
and fails, as nvcc would, when a unit that needs more of torch than the light headers declare is
compiled against them. Then, where nvcc and torch's headers exist, the light headers compile a
real load_inline-style CUDA unit.
"""
import os
import shutil
import subprocess
import sys
import tempfile

from gauntlet_worker import building

calls = []


def fake_load_inline(name, cpp_sources, cuda_sources=None, functions=None, extra_cflags=None,
                     extra_cuda_cflags=None, extra_ldflags=None, extra_include_paths=None,
                     build_directory=None, verbose=False, with_cuda=None, is_python_module=True,
                     with_pytorch_error_handling=True, keep_intermediates=True, use_pch=False):
    light = any("light_torch" in f for f in (extra_cuda_cflags or []))
    calls.append({"name": name, "light": light, "flags": list(extra_cuda_cflags or [])})
    if light and "NEEDS_ALL_OF_TORCH" in str(cuda_sources):
        raise RuntimeError("Error building extension '%s': cuda.cu(3): error: namespace \"torch\" has no member \"nn\"" % name)
    return "built-%s-%d" % (name, len(calls))


def build(recorder, name, cuda, **kw):
    calls.clear()
    recorder._wrap("load_inline", fake_load_inline)(name, "int f();", cuda_sources=cuda, functions=["f"], **kw)
    return list(calls), recorder.built[-1]


def expect(cond, what):
    if not cond:
        print("FAILED: " + what)
        sys.exit(1)


root = tempfile.mkdtemp()
r = building.Recorder(root)

made, rec = build(r, "plain_cuda", "#include <torch/extension.h>\n__global__ void k() {}")
expect(len(made) == 1 and made[0]["light"], "a plain CUDA unit is built once, with the light headers: %s" % made)
expect(rec["light_cuda_headers"] == "used", "its record says the light headers were used: %s" % rec)

made, rec = build(r, "own_flags", "__global__ void k() {}", extra_cuda_cflags=["-O3"])
expect(made[0]["flags"][-1] == "-O3" and made[0]["light"], "the module's own nvcc flags are kept: %s" % made)

made, rec = build(r, "binds_itself", "#include <torch/extension.h>\nPYBIND11_MODULE(m, x) {}")
expect(len(made) == 1 and not made[0]["light"], "a unit that binds itself is not offered them: %s" % made)
expect(rec["light_cuda_headers"].startswith("not tried"), "and its record says why: %s" % rec)

made, rec = build(r, "needs_all", "// NEEDS_ALL_OF_TORCH\n__global__ void k() {}")
expect(len(made) == 2 and made[0]["light"] and not made[1]["light"],
       "a unit the light headers do not compile is built again with torch's: %s" % made)
expect(rec["light_cuda_headers"].startswith("failed") and "no member" in rec["light_cuda_headers"],
       "its record names the light build's first error: %s" % rec)

calls.clear()
r._wrap("load_inline", fake_load_inline)("cpu_only", "int f();", functions=["f"])
expect(len(calls) == 1 and not calls[0]["light"] and r.built[-1]["light_cuda_headers"] == "",
       "a C++-only extension is not touched: %s" % calls)

os.environ["GAUNTLET_LIGHT_CUDA_HEADERS"] = "0"
made, rec = build(r, "switched_off", "__global__ void k() {}")
expect(len(made) == 1 and not made[0]["light"], "GAUNTLET_LIGHT_CUDA_HEADERS=0 turns them off: %s" % made)
del os.environ["GAUNTLET_LIGHT_CUDA_HEADERS"]

# A real compile: what load_inline's cuda.cu looks like (torch prepends the first three lines).
nvcc = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if os.path.exists("/usr/local/cuda/bin/nvcc") else None)
try:
    from torch.utils.cpp_extension import include_paths
    torch_includes = include_paths()
except Exception:  # noqa: BLE001
    torch_includes = []
if nvcc and torch_includes:
    unit = os.path.join(root, "cuda.cu")
    with open(unit, "w") as f:
        f.write("#include <torch/types.h>\n#include <cuda.h>\n#include <cuda_runtime.h>\n"
                "#include <torch/extension.h>\n"
                "__global__ void relu_kernel(const float* x, float* y, int64_t n) {\n"
                "  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;\n"
                "  if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;\n}\n"
                "torch::Tensor relu_cuda(torch::Tensor x) {\n"
                "  TORCH_CHECK(x.scalar_type() == torch::kFloat32, \"float32 only\");\n"
                "  auto xc = x.contiguous();\n"
                "  auto y = torch::empty_like(xc);\n"
                "  auto z = torch::zeros({xc.size(0)}, xc.options());\n"
                "  const int64_t n = xc.numel();\n"
                "  relu_kernel<<<(n + 255) / 256, 256>>>(xc.data_ptr<float>(), y.data_ptr<float>(), n);\n"
                "  return y.view(xc.sizes()) + z.sum();\n}\n")
    cmd = [nvcc, "-std=c++17", "-c", unit, "-o", unit + ".o", "-I" + building.LIGHT_CUDA_HEADERS]
    for p in torch_includes:
        cmd += ["-isystem", p]
    run = subprocess.run(cmd, capture_output=True, text=True)
    expect(run.returncode == 0, "the light headers compile a load_inline CUDA unit against torch %s:\n%s" %
           (torch_includes[0], building.error_lines(run.stdout + run.stderr)))
    print("compiled with nvcc against", torch_includes[0])
else:
    print("no real compile: nvcc %s, torch headers %s" % (nvcc or "missing", "found" if torch_includes else "missing"))
shutil.rmtree(root, ignore_errors=True)
print("ok")
