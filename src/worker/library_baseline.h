// The timing gate's baseline: the op's own ATen implementation, in the kernel's dtype and on its device.
#pragma once
#include <string>
#include <vector>

#include "gauntlet/kernel_abi.h"

namespace gauntlet::worker {

// Calls the ATen implementation of `op` with the kernel's arguments (tensors, then attributes, in
// the schema's order). False with *error for an op without a baseline or when ATen throws.
bool library_baseline(const std::string& op, const std::vector<KernelArg>& args, std::vector<at::Tensor>* outputs,
                      std::string* error);

// Whether `op` has a baseline (for tests: every schema's op should).
bool has_library_baseline(const std::string& op);

}  // namespace gauntlet::worker
