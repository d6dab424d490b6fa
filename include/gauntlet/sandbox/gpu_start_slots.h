// At most K CUDA children of one GPU start CUDA at once, host-wide: the rest wait in gauntlet, not in the driver.
#pragma once
#include <string>

#include "gauntlet/sandbox/file_lock.h"

namespace gauntlet {

// The driver creates contexts one after another (issue 18); a child that starts CUDA while others
// do waits inside the driver, holding its slot of the run and adding to the contexts the driver
// juggles (the thirty-third session's timeline: 4 contexts in creation at once at 4x4, 11 at 8x4,
// each dearer the more there were). A start slot is one of `slots` lock files beside the GPU's turn
// lock (`<turn lock>.start0` ...): a CUDA child's parent holds one from the Load frame to the load's
// reply, so at most `slots` of the GPU's children, across every gauntlet process, are starting CUDA.
// slots <= 0 takes nothing (the default until measured: GAUNTLET_GPU_START_SLOTS, docs/gpu.md).
// A parent gives its slot up once the load has taken SandboxOptions::gpu_start_slot_bound_seconds:
// the load includes dlopen of the kernel (its static initializers run there), and a kernel that
// hangs while loading must not stop every other child's start until its timeout.
class GpuStartSlot {
 public:
  static constexpr int kMaxSlots = 16;
  GpuStartSlot(const std::string& turn_lock_path, int slots);
  GpuStartSlot(const GpuStartSlot&) = delete;
  GpuStartSlot& operator=(const GpuStartSlot&) = delete;
  ~GpuStartSlot() = default;  // the FileLock lets go
  bool held() const { return lock_.held(); }
  void release() { lock_.unlock(), slot_ = -1; }
  int slot() const { return slot_; }   // which one is held; -1: none

 private:
  FileLock lock_;
  int slot_ = -1;
};

std::string gpu_start_slot_path(const std::string& turn_lock_path, int slot);

}  // namespace gauntlet
