// Which failure category a CUDA error message stands for, and whether the child's CUDA context survives it.
#pragma once
#include <string>

#include "gauntlet/common/types.h"

namespace gauntlet {

struct CudaErrorClass {
  bool is_cuda_error = false;  // the message names a CUDA error gauntlet knows (or says "CUDA error")
  Category category = Category::None;
  // The CUDA context is dead after it (a "sticky" error: every later CUDA call in the process
  // fails the same way): the child must not serve another case.
  bool context_lost = false;
};

// Classifies the message of a case the worker reported as an exception (the kernel's own, or
// "CUDA error after the call: ..." from the synchronize after it). Matches cudaGetErrorString()
// texts, which c10 and TORCH_CHECK/C10_CUDA_CHECK put in their messages:
//   illegal address, unspecified launch failure, misaligned address, illegal instruction,
//   invalid program counter, hardware stack error, device-side assert, address space error
//                                                              -> crash, context lost
//   launch timed out and was terminated (watchdog)             -> timeout, context lost
//   uncorrectable ECC error                                    -> harness-error, context lost
//   out of memory (cudaErrorMemoryAllocation, c10's "CUDA out of memory")
//                                                              -> out-of-memory
//   invalid configuration argument, too many resources requested for launch, no kernel image,
//   invalid device function, any other "CUDA error"            -> runtime-error
// Anything else: is_cuda_error false (the caller keeps its own category).
CudaErrorClass classify_cuda_error(const std::string& message);

}  // namespace gauntlet
