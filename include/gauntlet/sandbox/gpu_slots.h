// Host-wide slots of one GPU: at most K CUDA children start CUDA at once, at most K gates run at once.
#pragma once
#include <memory>
#include <string>

#include "gauntlet/sandbox/file_lock.h"

namespace gauntlet {

// A GPU slot is one of `slots` lock files beside the GPU's turn lock (`<turn lock>.<kind>0` ...),
// held across every gauntlet process on the host; `slots` <= 0 takes nothing. Two kinds:
//
// GpuSlot::kStart: the driver creates contexts one after another (issue 18); a child that starts
// CUDA while others do waits inside the driver, adding to the contexts the driver juggles (the
// thirty-third session's timeline: 4 contexts in creation at once at 4x4, 11 at 8x4, each dearer
// the more there were). A CUDA child's parent holds a start slot from the Load frame to the load's
// reply (GAUNTLET_GPU_START_SLOTS), and gives it up once the load has taken
// SandboxOptions::gpu_start_slot_bound_seconds: the load includes dlopen of the kernel (its static
// initializers run there), and a kernel that hangs while loading must not stop every other
// child's start until its timeout.
//
// GpuSlot::kGate: a CUDA gate holds one for each run of the gate (its children's whole lives,
// GAUNTLET_GPU_GATE_SLOTS), so that gauntlet processes of one GPU share one cap on the gates in
// flight instead of each keeping its own --gpu-jobs: a kernel in its timing gate (alone, SPEC)
// leaves its other slots to the other kernels' gates, and the driver has children to start
// without more of them alive at once. A gate never waits for any other slot while holding one.
class GpuSlot {
 public:
  static constexpr const char* kStart = "start";
  static constexpr const char* kGate = "gate";
  static constexpr int kMaxSlots = 64;
  GpuSlot(const std::string& turn_lock_path, const char* kind, int slots);
  GpuSlot(const GpuSlot&) = delete;
  GpuSlot& operator=(const GpuSlot&) = delete;
  ~GpuSlot() = default;  // the FileLock lets go
  bool held() const { return lock_.held(); }
  void release() { lock_.unlock(), slot_ = -1; }
  int slot() const { return slot_; }   // which one is held; -1: none

 private:
  FileLock lock_;
  int slot_ = -1;
};

std::string gpu_slot_path(const std::string& turn_lock_path, const char* kind, int slot);

// The gate slot the calling thread's gate holds, for its run (GateRunner). A child whose request
// overruns its GPU turn's bound gives its gate's slot up (WorkerSession::begin_overrun): the kernel
// has shown it may spin until its timeout, it runs on time-sliced beside the others anyway, and
// holding a slot meanwhile would take it from the other kernels' gates for a whole --timeout, as
// the unbounded turn once took the GPU. The gate does not take it back.
class CurrentGateSlot {
 public:
  // Holds `slot` for the thread's gate until destroyed; null: the thread's gate holds none.
  explicit CurrentGateSlot(std::unique_ptr<GpuSlot> slot);
  ~CurrentGateSlot();
  CurrentGateSlot(const CurrentGateSlot&) = delete;
  CurrentGateSlot& operator=(const CurrentGateSlot&) = delete;
  // Lets the calling thread's gate slot go, if it holds one; true when one was held.
  static bool give_up();

 private:
  std::unique_ptr<GpuSlot> slot_;
  GpuSlot* outer_;
};

}  // namespace gauntlet
