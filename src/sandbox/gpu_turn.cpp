// GPU turns, bounded, on host-wide file locks (include/gauntlet/sandbox/gpu_turn.h).
#include "gauntlet/sandbox/gpu_turn.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "gauntlet/common/trace.h"
#include "gauntlet/sandbox/sandbox.h"

namespace gauntlet {

std::string gpu_turn_lock_for(const SandboxOptions& options, bool cuda) {
  if (!options.fake_gpu_turn_lock.empty()) return options.fake_gpu_turn_lock;
  return cuda ? gpu_turn_path(options.gpu_index) : "";
}

std::string gpu_turn_path(int gpu_index) {
  std::string id = cuda_visible_devices_for(gpu_index, getenv("CUDA_VISIBLE_DEVICES"));
  for (char& c : id)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') c = '_';
  return "/tmp/gauntlet-gpu-turn-" + id + ".lock";
}

namespace {
// The turns this thread holds, by lock file, with their nesting depth.
thread_local std::map<std::string, int> t_held_turns;
std::mutex g_totals_mu;
GpuTurn::Totals g_totals;

double seconds_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

std::string overrun_path(const std::string& lock_path) { return lock_path + ".overrun"; }

// The overrun mark is an open-file-description read lock (fcntl), not a flock: a probe asks with
// F_OFD_GETLK whether any is held and takes nothing, so two probes at one instant never take each
// other for an overrun (a flock probe held the lock for an instant, and a second probe's try failed:
// a few cases a batch went beside others with nobody overrunning, and a timed run could have been
// called uncertain). -1 when the file cannot be opened or locked.
int hold_overrun_mark(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) return -1;
  struct flock fl {};
  fl.l_type = F_RDLCK;
  fl.l_whence = SEEK_SET;
  while (fcntl(fd, F_OFD_SETLKW, &fl) != 0)
    if (errno != EINTR) return (::close(fd), -1);
  return fd;
}
std::string slot_path(const std::string& lock_path, int slot) {
  return slot == 0 ? lock_path : lock_path + ".slot" + std::to_string(slot);
}
}  // namespace

GpuTurn::GpuTurn(const std::string& lock_path, TurnNeed need, int slots_while_overrun) : path_(lock_path) {
  int& depth = t_held_turns[path_];
  if (depth++ > 0) return;
  outer_ = true;
  asked_ns_ = monotonic_ns();
  const auto t0 = std::chrono::steady_clock::now();
  const int slots = std::clamp(slots_while_overrun, 1, kMaxSlots);
  const bool overrun = slots > 1 && overrun_in_progress(path_);  // one probe a turn
  if (need == TurnNeed::Case || overrun) {
    take_one_slot(slots, overrun);
  } else {
    // In slot order, as every whole-device turn: two of them never hold part of the slots each.
    // A case holds one slot and waits for none while holding it, so no cycle can form.
    for (int i = 0; i < kMaxSlots; ++i) slots_[i].lock(slot_path(path_, i), FileLock::Mode::Exclusive);
    whole_device_ = true;
  }
  granted_ = std::chrono::steady_clock::now();
  granted_ns_ = monotonic_ns();
  waited_ = seconds_between(t0, granted_);
}

void GpuTurn::take_one_slot(int slots, bool overrun) {
  if (overrun) {
    // The GPU is time-sliced beside the overrunning child anyway: any free slot will do. When all
    // are taken, wait for slot 0 as ever (every waiter before the overrun began waits there too,
    // and slot 0 is only ever held one case at a time, so nobody waits out the overrun).
    for (int i = 0; i < slots; ++i) {
      if (slots_[i].try_lock(slot_path(path_, i), FileLock::Mode::Exclusive)) {
        beside_others_ = true;
        return;
      }
    }
    beside_others_ = true;
  }
  slots_[0].lock(path_, FileLock::Mode::Exclusive);
}

void GpuTurn::release_slots() {
  for (FileLock& s : slots_) s.unlock();
}

double GpuTurn::held_seconds() const {
  return outer_ ? seconds_between(granted_, std::chrono::steady_clock::now()) : 0.0;
}

void GpuTurn::overrun() {
  if (!outer_ || overran_) return;
  // The mark first, then the turn: whoever is granted the turn next already sees the GPU shared.
  // Read locks never conflict with each other, and a probe only asks (overrun_in_progress).
  overrun_mark_fd_ = hold_overrun_mark(overrun_path(path_));
  held_at_overrun_ = held_seconds();
  release_slots();
  overran_ = true;
}

bool GpuTurn::overrun_in_progress(const std::string& lock_path) {
  const int fd = ::open(overrun_path(lock_path).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) return true;  // cannot tell: say shared, so no timed figure is claimed clean
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  const bool asked = fcntl(fd, F_OFD_GETLK, &fl) == 0;
  ::close(fd);
  return !asked || fl.l_type != F_UNLCK;
}

GpuTurn::~GpuTurn() {
  auto it = t_held_turns.find(path_);
  if (it != t_held_turns.end() && --it->second <= 0) t_held_turns.erase(it);
  if (!outer_) return;
  const double held = overran_ ? held_at_overrun_ : held_seconds();
  release_slots();
  if (overrun_mark_fd_ >= 0) ::close(overrun_mark_fd_);  // closing the description releases the mark
  if (trace::enabled()) {
    const std::string what = std::string(whole_device_ ? "device" : "case") + (beside_others_ ? " beside" : "") +
                              (overran_ ? " overran" : "");
    trace::interval("turn_wait", asked_ns_, granted_ns_, what);
    trace::interval("turn", granted_ns_, overran_ ? granted_ns_ + int64_t(held * 1e9) : monotonic_ns(), what);
  }
  std::lock_guard<std::mutex> lock(g_totals_mu);
  ++g_totals.turns;
  g_totals.overruns += overran_ ? 1 : 0;
  g_totals.beside_others += beside_others_ ? 1 : 0;
  g_totals.waited_seconds += waited_;
  g_totals.held_seconds += held;
  int slot = 0;
  while (slot < kHeldSlots - 1 && held > kHeldEdges[slot]) ++slot;
  ++g_totals.turns_by_length[slot];
  g_totals.held_by_length[slot] += held;
}

GpuTurn::Totals GpuTurn::process_totals() {
  std::lock_guard<std::mutex> lock(g_totals_mu);
  return g_totals;
}

}  // namespace gauntlet
