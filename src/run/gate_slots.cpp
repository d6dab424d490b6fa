// GateSlots: a counting gate for correctness gates, with an exclusive hold that new gates queue behind.
#include "gauntlet/run/gate_slots.h"

#include <chrono>

#include "gauntlet/sandbox/gpu_slots.h"

namespace gauntlet {

template <class Ready>
void GateSlots::wait(std::unique_lock<std::mutex>& lock, Ready ready) {
  if (!lent_) return cv_.wait(lock, ready);
  while (!ready()) cv_.wait_for(lock, std::chrono::milliseconds(50));
}

void GateSlots::acquire(int rank, const std::function<void()>& queued) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto mine = waiting_ranks_.insert(rank);
  if (queued) queued();
  wait(lock, [&] {
    return !exclusive_ && exclusive_waiting_ == 0 && in_use_ < total() && *waiting_ranks_.begin() == rank;
  });
  waiting_ranks_.erase(mine);
  ++in_use_;
  cv_.notify_all();  // the next rank may fit in a slot still free
}

void GateSlots::release() {
  std::lock_guard<std::mutex> lock(mu_);
  --in_use_;
  cv_.notify_all();
}

void GateSlots::acquire_all() {
  std::unique_lock<std::mutex> lock(mu_);
  ++exclusive_waiting_;
  wait(lock, [&] { return !exclusive_ && in_use_ == 0; });
  --exclusive_waiting_;
  exclusive_ = true;
}

void GateSlots::release_all() {
  std::lock_guard<std::mutex> lock(mu_);
  exclusive_ = false;
  cv_.notify_all();
}

namespace {
GateSlots& gpu_gate_slot_line() {
  static GateSlots line(1);  // one gate of the process in the host's line at a time
  return line;
}
}  // namespace

std::unique_ptr<GpuSlot> take_gpu_gate_slot(const std::string& turn_lock, int slots, int rank) {
  GateSlots& line = gpu_gate_slot_line();
  line.acquire(rank);
  struct Leave {
    GateSlots& line;
    ~Leave() { line.release(); }
  } leave{line};
  return std::make_unique<GpuSlot>(turn_lock, GpuSlot::kGate, slots);
}

int gpu_gate_slot_line_waiting() { return gpu_gate_slot_line().waiting(); }

}  // namespace gauntlet
