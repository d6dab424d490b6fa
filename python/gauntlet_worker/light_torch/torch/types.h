// gauntlet: a light stand-in for <torch/types.h> in a CUDA extension's nvcc unit (docs/modules.md, "Light CUDA headers").
// torch's own header pulls in all of ATen (every operator's declaration) and nvcc parses it three
// times; a .cu file of a load_inline extension mostly needs Tensor, its methods, the factories and
// the CUDA stream. A unit that needs more fails to compile against this and is built again with
// torch's own headers, so this only ever saves time; it never changes which sources build.
#pragma once
#include <ATen/core/Tensor.h>
#include <ATen/Dispatch.h>
#include <ATen/TensorOperators.h>
#include <c10/core/Scalar.h>
#include <c10/core/TensorOptions.h>
#include <c10/util/Exception.h>
#include <c10/util/Optional.h>

// The operators KernelBench-style CUDA units call beside their own kernels (factories first).
#if __has_include(<ATen/ops/empty.h>)
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/full.h>
#include <ATen/ops/full_like.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/bmm.h>
#include <ATen/ops/addmm.h>
#include <ATen/ops/relu.h>
#include <ATen/ops/sigmoid.h>
#include <ATen/ops/tanh.h>
#include <ATen/ops/softmax.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/mean.h>
#include <ATen/ops/max.h>
#include <ATen/ops/clamp.h>
#endif

// A CPU-only torch ships these headers without the macros they need: present only with CUDA.
#if __has_include(<c10/cuda/impl/cuda_cmake_macros.h>)
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAGuard.h>
#include <ATen/cuda/CUDAContext.h>
#endif

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
