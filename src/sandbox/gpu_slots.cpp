// Host-wide slots of one GPU, by kind (include/gauntlet/sandbox/gpu_slots.h).
#include "gauntlet/sandbox/gpu_slots.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

#include "gauntlet/common/trace.h"

namespace gauntlet {

std::string gpu_slot_path(const std::string& turn_lock_path, const char* kind, int slot) {
  return turn_lock_path + "." + kind + std::to_string(slot);
}

GpuSlot::GpuSlot(const std::string& turn_lock_path, const char* kind, int slots) {
  if (slots <= 0 || turn_lock_path.empty()) return;
  slots = std::min(slots, kMaxSlots);
  // Slot files that cannot be made leave the GPU unlimited rather than waiting forever.
  for (int i = 0; i < slots; ++i) {
    const int fd = ::open(gpu_slot_path(turn_lock_path, kind, i).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) return;
    ::close(fd);
  }
  const int64_t asked = monotonic_ns();
  const auto try_every_slot = [&] {
    for (int i = 0; i < slots && slot_ < 0; ++i)
      if (lock_.try_lock(gpu_slot_path(turn_lock_path, kind, i), FileLock::Mode::Exclusive)) slot_ = i;
    return slot_ >= 0;
  };
  if (!try_every_slot()) {
    // Every slot taken. flock cannot wait for any one of several files, and waiting on one of them
    // could wait out a long holder while another slot frees: the waiters line up on a queue lock
    // instead, and only the first in line polls the slots (every half millisecond, against the
    // ~75 ms a context takes). A queue lock that cannot be opened leaves every waiter polling.
    FileLock line(turn_lock_path + "." + kind + "q", FileLock::Mode::Exclusive);
    while (!try_every_slot()) usleep(500);
  }
  trace::interval((std::string(kind) + "_slot_wait").c_str(), asked, monotonic_ns(), std::to_string(slot_));
}

namespace {
thread_local GpuSlot* t_gate_slot = nullptr;
}

CurrentGateSlot::CurrentGateSlot(std::unique_ptr<GpuSlot> slot) : slot_(std::move(slot)), outer_(t_gate_slot) {
  t_gate_slot = slot_.get();
}

CurrentGateSlot::~CurrentGateSlot() { t_gate_slot = outer_; }

bool CurrentGateSlot::give_up() {
  if (!t_gate_slot || !t_gate_slot->held()) return false;
  const int64_t now = monotonic_ns();
  trace::interval("gate_slot_given_up", now, now, std::to_string(t_gate_slot->slot()));
  t_gate_slot->release();
  return true;
}

}  // namespace gauntlet
