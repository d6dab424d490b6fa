# Light stand-ins for <torch/types.h> and <torch/extension.h> in a CUDA unit's nvcc, written for what its source names.
"""The light torch headers of a load_inline CUDA unit (docs/modules.md, "Builds").

load_inline puts `#include <torch/types.h>` at the top of `cuda.cu`, and the source usually
includes `<torch/extension.h>` too: all of ATen, torch's C++ frontend, Python.h and pybind11,
which nvcc parses three times (cudafe++, cicc, the host compiler). A KernelBench unit needs a
fraction of that: Tensor with its methods and operators, a few factories and operators, the
dispatch macros, TORCH_CHECK and, sometimes, the CUDA stream. The build child writes a pair of
headers into the extension's build directory that declare exactly that, and puts the directory
first on nvcc's include path. Three choices keep them small:

* `AT_PER_OPERATOR_HEADERS`: without it `ATen/TensorOperators.h` includes `ATen/Functions.h`, the
  declaration of every operator (torch 1.13: 7.95 MB preprocessed against 5.03 MB with it, and
  nvcc on a ReLU unit 32.4 s against 18.5 s on the 2-core machine).
* Only the operators the source calls get their `ATen/ops/NAME.h` (where torch has one): any
  `torch::NAME(` or `at::NAME(`, and the common ones (DEFAULT_OPS) however they are spelled
  (`using namespace torch;` is common). Every operator header skipped is text nvcc does not parse
  three times: on the H200, a scale-add unit with the 24 common operators always included took
  15.8 s of nvcc.
* The CUDA context headers (`ATen/cuda/CUDAContext.h` pulls cuBLAS, cuSPARSE and cuSOLVER's)
  only when the source names the stream, a guard or the context.

A unit these do not compile (it calls an operator unqualified, uses torch::nn, ...) is built again
with torch's own headers (building.py), so the choice changes the time of a build, never whether
or how it builds.
"""
import os
import re

# Operators KernelBench-style CUDA units call beside their own kernels, factories first: declared
# when the source calls them with or without a namespace (an unqualified `tanh(` may be CUDA's own
# math function: its header is then included for nothing, which costs little and breaks nothing).
DEFAULT_OPS = ("empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full",
               "full_like", "arange", "matmul", "mm", "bmm", "addmm", "relu", "sigmoid", "tanh", "softmax",
               "cat", "stack", "sum", "mean", "max", "clamp")
MAX_NAMED_OPS = 64  # a guard against a generated source naming thousands of identifiers
_NAMED_OP = re.compile(r"\b(?:torch|at)\s*::\s*([a-z_][a-z0-9_]{0,63})\s*\(")
_NEEDS_CUDA_CONTEXT = re.compile(
    r"\b(?:at|c10)\s*::\s*cuda\b|CUDAGuard|CUDAStream|getCurrentCUDA|CUDAContext|getCurrentDeviceProperties"
    r"|getDefaultCUDAStream|cublas|cusparse|cusolver|CUDAFunctions|cuda_stream")

EXTENSION_H = """\
// gauntlet: a light stand-in for <torch/extension.h> in a CUDA extension's nvcc unit (see types.h here).
// No Python and no pybind11: load_inline binds the functions in its own main.cpp, built with torch's
// real header. A .cu file that binds them itself is never given these headers.
#pragma once
#include <torch/types.h>  // the light one beside this file
"""

_TORCH_NAMES = """\
namespace torch {
using namespace at;  // NOLINT: torch::X names at::X, as in torch's own header
using c10::nullopt;
using c10::optional;
using Dtype = at::ScalarType;
constexpr auto kUInt8 = at::kByte;
constexpr auto kInt8 = at::kChar;
constexpr auto kInt16 = at::kShort;
constexpr auto kInt32 = at::kInt;
constexpr auto kInt64 = at::kLong;
constexpr auto kFloat16 = at::kHalf;
constexpr auto kFloat32 = at::kFloat;
constexpr auto kFloat64 = at::kDouble;
constexpr auto kU8 = kUInt8;
constexpr auto kI8 = kInt8;
constexpr auto kI16 = kInt16;
constexpr auto kI32 = kInt32;
constexpr auto kI64 = kInt64;
constexpr auto kF16 = kFloat16;
constexpr auto kF32 = kFloat32;
constexpr auto kF64 = kFloat64;
}  // namespace torch
"""


def named_ops(texts):
    """The operator names the sources call as torch::NAME( or at::NAME(, beyond DEFAULT_OPS, in order."""
    seen = []
    for text in texts:
        for m in _NAMED_OP.finditer(text):
            name = m.group(1)
            if name not in DEFAULT_OPS and name not in seen:
                seen.append(name)
                if len(seen) >= MAX_NAMED_OPS:
                    return seen
    return seen


def called_ops(texts):
    """The operator headers a unit gets: the common ones it calls however spelled, then the ones
    it names with a namespace."""
    joined = "\n".join(texts)
    common = [op for op in DEFAULT_OPS if re.search(r"\b%s\s*\(" % op, joined)]
    return common + named_ops(texts)


def needs_cuda_context(texts):
    """Whether a source names the CUDA stream, a device guard or torch's CUDA context."""
    return any(_NEEDS_CUDA_CONTEXT.search(t) for t in texts)


def types_h(texts):
    """The light <torch/types.h> for CUDA sources `texts`."""
    lines = ["// gauntlet: a light stand-in for <torch/types.h>, written for this unit's source "
             "(python/gauntlet_worker/light_headers.py).",
             "#pragma once",
             "// Each operator's own header instead of ATen/Functions.h (every operator) behind TensorOperators.h.",
             "#ifndef AT_PER_OPERATOR_HEADERS",
             "#define AT_PER_OPERATOR_HEADERS",
             "#endif",
             "#include <ATen/core/Tensor.h>",
             "#include <ATen/Dispatch.h>",
             "#include <ATen/TensorOperators.h>",
             "#include <c10/core/Scalar.h>",
             "#include <c10/core/TensorOptions.h>",
             "#include <c10/util/Exception.h>",
             "#include <c10/util/Optional.h>"]
    # __has_include: a name that is no operator (or one this torch lacks) costs nothing.
    for op in called_ops(texts):
        lines += ["#if __has_include(<ATen/ops/%s.h>)" % op, "#include <ATen/ops/%s.h>" % op, "#endif"]
    if needs_cuda_context(texts):
        # A CPU-only torch ships these headers without the macros they need: present only with CUDA.
        lines += ["#if __has_include(<c10/cuda/impl/cuda_cmake_macros.h>)",
                  "#include <c10/cuda/CUDAStream.h>",
                  "#include <c10/cuda/CUDAGuard.h>",
                  "#include <ATen/cuda/CUDAContext.h>",
                  "#endif"]
    return "\n".join(lines) + "\n\n" + _TORCH_NAMES


def write(directory, texts):
    """Writes DIRECTORY/torch/{types.h,extension.h} for `texts`; returns DIRECTORY (nvcc's -I)."""
    os.makedirs(os.path.join(directory, "torch"), exist_ok=True)
    for name, body in (("types.h", types_h(texts)), ("extension.h", EXTENSION_H)):
        with open(os.path.join(directory, "torch", name), "w", encoding="utf-8") as f:
            f.write(body)
    return directory


def summary(texts):
    """A few words on what the headers hold, for the build record."""
    ops = called_ops(texts)
    return "%d op header%s%s" % (len(ops), "" if len(ops) == 1 else "s",
                                 ", CUDA context" if needs_cuda_context(texts) else "")
