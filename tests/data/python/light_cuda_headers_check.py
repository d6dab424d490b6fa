# Checks the build child's light CUDA headers (python/gauntlet_worker/building.py): who is offered them, the fallback, a real nvcc compile.
"""Run by tests/e2e/module_build_test.cpp (ModuleBuilds.CudaUnitsGetTheLightTorchHeadersAndFallBackToTorchsOwn) with PYTHONPATH=<source>/python; prints "ok" or fails.

A fake load_inline stands in for torch's (no CUDA torch here): it records the flags it was given
and fails, as ninja would (naming the failed object), when a unit that needs more of torch than
the light headers declare is compiled against them, when a source is wrong, or when g++ refuses
the precompiled header. The light headers are written for each unit's source: what they hold is
checked. Then, where nvcc and torch's headers exist, the light headers compile a real
load_inline-style CUDA unit.
"""
import os
import shutil
import subprocess
import sys
import tempfile

from gauntlet_worker import building, light_headers

calls = []


def fake_load_inline(name, cpp_sources, cuda_sources=None, functions=None, extra_cflags=None,
                     extra_cuda_cflags=None, extra_ldflags=None, extra_include_paths=None,
                     build_directory=None, verbose=False, with_cuda=None, is_python_module=True,
                     with_pytorch_error_handling=True, keep_intermediates=True, use_pch=False):
    light = [f[2:] for f in (extra_cuda_cflags or []) if f.startswith("-I") and building.LIGHT_HEADERS_DIR in f]
    pch = "-include" in (extra_cflags or [])
    types_h = open(os.path.join(light[0], "torch", "types.h")).read() if light else ""
    calls.append({"name": name, "light": bool(light), "pch": pch, "flags": list(extra_cuda_cflags or []),
                  "types_h": types_h, "cflags": list(extra_cflags or [])})
    if light and "NEEDS_ALL_OF_TORCH" in str(cuda_sources):
        raise RuntimeError("Error building extension '%s': [1/3] c++ main.o\nFAILED: cuda.cuda.o\n"
                           "cuda.cu(3): error: namespace \"torch\" has no member \"nn\"" % name)
    if "BROKEN_CUDA" in str(cuda_sources):
        raise RuntimeError("Error building extension '%s': FAILED: cuda.cuda.o\ncuda.cu(9): error: "
                           "identifier \"blockIdxx\" is undefined" % name)
    if pch and "OWN_FLAGS_REFUSE_PCH" in str(cpp_sources):
        raise RuntimeError("Error building extension '%s': FAILED: main.o\ncc1plus: error: one or more PCH files "
                           "were found, but they were invalid [-Werror=invalid-pch]" % name)
    return "built-%s-%d" % (name, len(calls))


def build(recorder, name, cuda, cpp="int f();", **kw):
    calls.clear()
    recorder._wrap("load_inline", fake_load_inline)(name, cpp, cuda_sources=cuda, functions=["f"], **kw)
    return list(calls), recorder.built[-1]


def expect(cond, what):
    if not cond:
        print("FAILED: " + what)
        sys.exit(1)


root = tempfile.mkdtemp()
r = building.Recorder(root)

made, rec = build(r, "plain_cuda", "#include <torch/extension.h>\n__global__ void k() {}")
expect(len(made) == 1 and made[0]["light"], "a plain CUDA unit is built once, with the light headers: %s" % made)
expect(rec["light_cuda_headers"].startswith("used"), "its record says the light headers were used: %s" % rec)
types_h = made[0]["types_h"]
expect("#define AT_PER_OPERATOR_HEADERS" in types_h and "ATen/ops/" not in types_h and "CUDAContext.h" not in types_h,
       "a unit that calls no operator and names no stream gets no operator and no CUDA context header:\n%s" % types_h)

made, rec = build(r, "calls_factories", "using namespace torch;\n__global__ void k() {}\n"
                  "Tensor f(Tensor x) { auto y = empty_like(x); return torch::zeros({3}, x.options()); }")
types_h = made[0]["types_h"]
expect("ATen/ops/empty_like.h" in types_h and "ATen/ops/zeros.h" in types_h and "ATen/ops/ones.h" not in types_h,
       "the common operators it calls, with or without a namespace, and no other:\n%s" % types_h)

made, rec = build(r, "names_ops", "__global__ void k() {}\n"
                  "torch::Tensor f(torch::Tensor x) { auto s = at::cuda::getCurrentCUDAStream();\n"
                  "  return torch::softplus(x) + at::logsumexp (x, 1) + torch::nn::functional::relu(x); }")
types_h = made[0]["types_h"]
expect("ATen/ops/softplus.h" in types_h and "ATen/ops/logsumexp.h" in types_h and "ATen/cuda/CUDAContext.h" in types_h,
       "the operators a unit calls by name and the CUDA context it names are declared:\n%s" % types_h)
expect("ops/cuda.h" not in types_h and "ops/nn.h" not in types_h and "ops/functional.h" not in types_h,
       "namespaces are not taken for operators:\n%s" % types_h)
expect("3 op headers, CUDA context" in rec["light_cuda_headers"], "the record says what they held: %s" % rec)

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

try:
    build(r, "broken", "// BROKEN_CUDA\n__global__ void k() {}")
    expect(False, "a CUDA unit that does not compile with torch's own headers raises")
except RuntimeError as e:
    expect("blockIdxx" in str(e) and len(calls) == 2 and calls[0]["light"] and not calls[1]["light"],
           "a wrong unit is built twice (light, then torch's headers) and its error raised: %s" % calls)

# The precompiled header for main.cpp, together with the light headers for cuda.cu: one torch call.
pch_dir = os.path.join(root, "pch")
os.makedirs(pch_dir)
header = os.path.join(pch_dir, "gauntlet_torch_extension.h")
open(header, "w").write("#pragma once\n")
open(header + ".gch", "w").write("")
open(os.path.join(pch_dir, "flags.json"), "w").write('{"compiler": "%s"}' % building.cxx_compiler())
rp = building.Recorder(os.path.join(root, "with-pch"), {"": header})
made, rec = build(rp, "both", "__global__ void k() {}")
expect(len(made) == 1 and made[0]["light"] and made[0]["pch"] and rec["pch"] == "used" and rec["light_cuda_headers"].startswith("used"),
       "the C++ unit's header and the CUDA unit's light headers go into one build: %s / %s" % (made, rec))
made, rec = build(rp, "pch_then_light_fails", "// NEEDS_ALL_OF_TORCH\n__global__ void k() {}")
expect(len(made) == 2 and made[1]["pch"] and not made[1]["light"] and rec["pch"] == "used",
       "when the light headers fail, the build again keeps the precompiled header: %s / %s" % (made, rec))
made, rec = build(rp, "own_flags_refuse_pch", "__global__ void k() {}", cpp="// OWN_FLAGS_REFUSE_PCH\nint f();")
expect(len(made) == 2 and not made[1]["pch"] and made[1]["light"] and rec["light_cuda_headers"].startswith("used")
       and rec["pch"].startswith("rejected"),
       "when g++ refuses the header, the build again keeps the light headers: %s / %s" % (made, rec))

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
                "  AT_DISPATCH_FLOATING_TYPES(xc.scalar_type(), \"relu\", [&] { (void)xc.data_ptr<scalar_t>(); });\n"
                "  return (y.view(xc.sizes()) + z.sum()) * torch::softplus(y);\n}\n")
    source = open(unit).read()
    cmd = [nvcc, "-std=c++17", "-c", unit, "-o", unit + ".o", "-I" + light_headers.write(os.path.join(root, "light"), [source])]
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
