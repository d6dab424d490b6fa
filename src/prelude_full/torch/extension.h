// gauntlet stand-in for <torch/extension.h> (full prelude): the REAL <torch/torch.h> (this
// directory has no torch/torch.h, so the include below reaches LibTorch's), plus gauntlet's
// pybind11 stub. The real torch/extension.h needs Python.h, so it is always shadowed.
#pragma once
#include <torch/torch.h>
#include <pybind11/pybind11.h>  // forwards to src/prelude/pybind11 (the stub)

#if defined(__CUDACC__)
#if __has_include(<ATen/cuda/CUDAContext.h>)
#include <ATen/cuda/CUDAContext.h>
#endif
#if __has_include(<c10/cuda/CUDAGuard.h>)
#include <c10/cuda/CUDAGuard.h>
#endif
#endif

#ifndef TORCH_EXTENSION_NAME
#define TORCH_EXTENSION_NAME gauntlet_kernel
#endif
