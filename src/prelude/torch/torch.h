// gauntlet light prelude: stands in for <torch/torch.h> when building kernels.
// ATen plus the torch:: aliases (torch::Tensor, torch::zeros, torch::kFloat32, ...) compile in a
// fraction of the time of the whole C++ frontend. A kernel that needs more (torch::nn, optimizers,
// ...) fails to compile here and the builder retries it with the full prelude (src/prelude_full).
#pragma once
#include <ATen/ATen.h>
#include <torch/types.h>
