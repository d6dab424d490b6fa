// GPU turns: one gauntlet child executes on a GPU at a time, and none keeps it past a bound.
#pragma once
#include <chrono>
#include <functional>
#include <string>

#include "gauntlet/sandbox/file_lock.h"

namespace gauntlet {

// The lock file of a GPU's turns: named after the GPU as the children see it (an index or the
// UUID from CUDA_VISIBLE_DEVICES), so several gauntlet processes (audit lanes, Slurm tasks on one
// node, parallel verifies) share it.
std::string gpu_turn_path(int gpu_index);

struct SandboxOptions;
// The lock file whose turns a child of `options` takes: a fake device's (tests) or its GPU's when
// the child is a CUDA one; "" when it takes none.
std::string gpu_turn_lock_for(const SandboxOptions& options, bool cuda);

// One sandbox's turn on a GPU: while held, no other gauntlet child executes there. CUDA contexts
// of several processes time-slice a GPU, which made every gate 20-50x slower on the H200 and
// would put other processes' work inside the timing gate's clocks; children that only start
// (CUDA init, loading the kernel) or wait for the parent need no turn, so they overlap freely.
// Re-entrant per thread: a turn taken while the same thread holds one on that GPU is a no-op (the
// timing gate holds its turn across the timed loop, whose exchanges take turns themselves).
//
// A turn is bounded (SandboxOptions::gpu_turn_bound_seconds): a request still running past the
// bound gives its turn up (overrun) and goes on beside the next holder, time-sliced, until it
// replies or its own timeout ends it. One slow or spinning kernel then costs the others a share of
// the GPU instead of a queue as long as its timeout. While a child overruns it holds a read lock
// on `<lock file>.overrun`, so a timed loop can tell that it did not have the GPU to itself.
//
// While a child overruns, the GPU is time-sliced whatever the others do, and a case that had it
// alone waited for the spinner's time slice on every synchronization (on an H100, 3.4 ms a case
// instead of 0.24): one turn at a time made an audit of sixteen children beside a spinner run at
// half its speed. So while an overrun is in progress a case may take one of `slots_while_overrun`
// turn slots (`<lock file>`, `<lock file>.slot1`, ...) that is free, and the contexts holding them
// share the spinner's time slices instead of queueing for them. A turn that needs the device to
// itself (a timed run, the peaks) takes every slot, so none of those cases runs inside its clock;
// during an overrun it cannot have the device to itself anyway (its figures are reported
// uncertain), so it takes one slot like a case instead of stopping every other child for its run.

// What a turn asks of the device.
enum class TurnNeed {
  Case,         // one case or check: any free slot while an overrun is in progress
  WholeDevice,  // a measurement (timed run, peaks): every slot, unless an overrun is in progress
};

class GpuTurn {
 public:
  // The most slots a device's turns have (SandboxOptions::gpu_turn_slots_while_overrun is clamped
  // to it); a whole-device turn takes every one, so processes set to fewer still exclude it.
  static constexpr int kMaxSlots = 16;
  explicit GpuTurn(int gpu_index) : GpuTurn(gpu_turn_path(gpu_index)) {}
  // A turn on the device whose lock file is `lock_path` (tests use a fake device's file).
  explicit GpuTurn(const std::string& lock_path, TurnNeed need = TurnNeed::Case, int slots_while_overrun = 1);
  ~GpuTurn();
  GpuTurn(const GpuTurn&) = delete;
  GpuTurn& operator=(const GpuTurn&) = delete;

  // Seconds spent waiting for the turn (0 when re-entered); a child's deadline is extended by it.
  double waited_seconds() const { return waited_; }
  // False for a re-entered turn, which holds nothing of its own and is never given up early.
  bool outer() const { return outer_; }
  // Seconds since the turn was granted.
  double held_seconds() const;
  // Gives the turn to the next waiter while this holder's request goes on running (past its
  // bound). Marks the GPU as shared until this object ends. No-op when not outer or already done.
  void overrun();
  bool overran() const { return overran_; }
  // Granted on a slot beside other holders because a child was overrunning (not alone on the GPU).
  bool beside_others() const { return beside_others_; }

  // Whether some child is running past its bound on this device now (its turn given up).
  static bool overrun_in_progress(const std::string& lock_path);

  // This process's outer turns so far, for "where the time goes" (verify reports them per kernel).
  // held_seconds counts a turn until it ended or was given up; overruns, those given up.
  // held_by_length: the turns by how long each was held (up to kHeldEdges[i] seconds, the last
  // slot longer than every edge), so a few long turns (a child's first case) show apart from many
  // short ones (the per-case cost).
  static constexpr double kHeldEdges[] = {0.001, 0.003, 0.01, 0.03, 0.1, 1.0};
  static constexpr int kHeldSlots = int(sizeof(kHeldEdges) / sizeof(kHeldEdges[0])) + 1;
  struct Totals {
    long turns = 0, overruns = 0, beside_others = 0;
    double waited_seconds = 0, held_seconds = 0;
    long turns_by_length[kHeldSlots] = {};
    double held_by_length[kHeldSlots] = {};
  };
  static Totals process_totals();

 private:
  void take_one_slot(int slots, bool overrun);
  void release_slots();

  std::string path_;
  FileLock slots_[kMaxSlots];  // slot 0 is the lock file itself
  int overrun_mark_fd_ = -1;  // an OFD read lock on `<lock file>.overrun` while overrunning (gpu_turn.cpp)
  double waited_ = 0, held_at_overrun_ = 0;
  bool outer_ = false, overran_ = false, beside_others_ = false, whole_device_ = false;
  int64_t asked_ns_ = 0, granted_ns_ = 0;  // CLOCK_MONOTONIC, for the timeline (common/trace.h)
  std::chrono::steady_clock::time_point granted_;
};


}  // namespace gauntlet
