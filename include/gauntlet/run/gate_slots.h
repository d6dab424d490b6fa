// Gate processes in flight at once: slots that correctness gates share and the timing gate takes whole.
#pragma once
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>

namespace gauntlet {

class GpuSlot;  // gauntlet/sandbox/gpu_slots.h

// Gate processes in flight, shared by every kernel verified at once (audit --jobs). A correctness
// gate holds one slot; the timing gate holds them all (it must have the CPU cores and the GPU to
// itself), and once it waits, no new gate starts until it has run, so it is never starved.
// Among gates waiting for a slot, the lowest `rank` goes first (gate_start_rank: the longest gates
// first, so a kernel's last slots are not left to one long gate while the others idle).
//
// `lent`, when given, counts slots that other processes lend this one while they have nothing to
// do (an audit's idle lanes, in shared memory): they add to `slots`, so the last kernels of an
// audit (one that hangs: a timeout per gate, wall-clock) spread over the whole machine.
class GateSlots {
 public:
  explicit GateSlots(int slots, const std::atomic<int>* lent = nullptr)
      : base_(slots < 1 ? 1 : slots), lent_(lent) {}
  int total() const { return base_ + (lent_ ? std::max(0, lent_->load()) : 0); }
  // `queued`, when given, is called once the gate is in the line (before it waits, or as it takes a
  // free slot): a caller starting several gates starts the next only then, so they take free slots
  // in the order it started them, not in the order their threads happen to run.
  void acquire(int rank = 0, const std::function<void()>& queued = nullptr);
  void release();
  void acquire_all();
  void release_all();
  // Gates now waiting in acquire() (tests wait for them to be queued).
  int waiting() {
    std::lock_guard<std::mutex> lock(mu_);
    return int(waiting_ranks_.size());
  }
  // Exclusive holds now waiting for the gates in flight (tests wait for one to be queued).
  int exclusive_waiting() {
    std::lock_guard<std::mutex> lock(mu_);
    return exclusive_waiting_;
  }

 private:
  // Waits for `ready` under `lock`; another process changes `lent_` without notifying, so then
  // the condition is polled as well.
  template <class Ready>
  void wait(std::unique_lock<std::mutex>& lock, Ready ready);
  std::mutex mu_;
  std::condition_variable cv_;
  const int base_;
  const std::atomic<int>* lent_;
  int in_use_ = 0;
  std::multiset<int> waiting_ranks_;  // of the gates waiting in acquire()
  bool exclusive_ = false;
  int exclusive_waiting_ = 0;
};

// One of a GPU's host-wide gate slots (GpuSlot::kGate, `slots` of them beside `turn_lock`), for a
// gate of rank `rank` (gate_start_rank). The host's waiters line up on a file lock in no order of
// rank, so with more gates of a process waiting than the host has slots free, the longest gates
// could start last and leave a kernel's end to one long gate: a process's gates therefore enter
// the host's line one at a time, lowest rank first, as they take this process's own slots.
std::unique_ptr<GpuSlot> take_gpu_gate_slot(const std::string& turn_lock, int slots, int rank);
// This process's gates waiting to enter the host's line (tests wait for them to be queued).
int gpu_gate_slot_line_waiting();

}  // namespace gauntlet
