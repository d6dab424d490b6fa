// Categorizing CUDA error messages reported by a worker child (docs/gpu.md, "Sandbox").
#include "gauntlet/sandbox/cuda_errors.h"

namespace gauntlet {

CudaErrorClass classify_cuda_error(const std::string& message) {
  auto has = [&](const char* s) { return message.find(s) != std::string::npos; };
  CudaErrorClass c;
  c.is_cuda_error = true;
  // Sticky errors (CUDA runtime API: "the process is left in an inconsistent state and any
  // further CUDA work will return the same error"): the process must be terminated.
  if (has("an illegal memory access was encountered") || has("unspecified launch failure") ||
      has("misaligned address") || has("an illegal instruction was encountered") ||
      has("invalid program counter") || has("hardware stack error") ||
      has("device-side assert triggered") ||
      has("operation not supported on global/shared address space")) {
    c.category = Category::Crash;
    c.context_lost = true;
  } else if (has("the launch timed out and was terminated")) {
    c.category = Category::Timeout;
    c.context_lost = true;
  } else if (has("uncorrectable ECC error encountered")) {
    c.category = Category::HarnessError;  // the GPU's fault, not the kernel's
    c.context_lost = true;
  } else if (has("out of memory")) {  // "CUDA error: out of memory", "CUDA out of memory. Tried to allocate ..."
    c.category = Category::OutOfMemory;
  } else if (has("invalid configuration argument") || has("too many resources requested for launch") ||
             has("no kernel image is available") || has("invalid device function") ||
             has("CUDA error")) {
    c.category = Category::RuntimeError;
  } else {
    c.is_cuda_error = false;
  }
  return c;
}

}  // namespace gauntlet
