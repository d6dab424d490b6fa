// gauntlet: a light stand-in for <torch/extension.h> in a CUDA extension's nvcc unit (see types.h here).
// No Python and no pybind11: load_inline binds the functions in its own main.cpp, built with
// torch's real header. A .cu file that binds them itself is never given these headers.
#pragma once
#include <torch/types.h>  // the light one beside this file
