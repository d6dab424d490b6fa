// gauntlet stand-in for <torch/extension.h> (light prelude): no Python.
// The real header includes Python.h and pybind11; kernels written for torch.utils.cpp_extension
// only need torch plus a PYBIND11_MODULE block that compiles and is never called.
#pragma once
#include <torch/torch.h>  // the active prelude's torch/torch.h
#include <pybind11/pybind11.h>  // gauntlet's pybind11 stub

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
