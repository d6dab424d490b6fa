// Host-wide file locks and the GPU turn (include/gauntlet/file_lock.h).
#include "gauntlet/file_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>

#include "gauntlet/sandbox.h"

namespace gauntlet {

bool flock_retrying(int fd, int op) {
  while (flock(fd, op) != 0)
    if (errno != EINTR) return false;
  return true;
}

bool FileLock::lock(const std::string& path, Mode mode) {
  unlock();
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd_ < 0) return false;
  if (!flock_retrying(fd_, mode == Mode::Exclusive ? LOCK_EX : LOCK_SH)) {
    ::close(fd_);
    fd_ = -1;
  }
  return fd_ >= 0;
}

void FileLock::unlock() {
  if (fd_ >= 0) ::close(fd_);  // closing the description releases its lock
  fd_ = -1;
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
}  // namespace

GpuTurn::GpuTurn(int gpu_index) : path_(gpu_turn_path(gpu_index)) {
  int& depth = t_held_turns[path_];
  if (depth++ > 0) return;
  outer_ = true;
  const auto t0 = std::chrono::steady_clock::now();
  lock_.lock(path_, FileLock::Mode::Exclusive);
  granted_ = std::chrono::steady_clock::now();
  waited_ = seconds_between(t0, granted_);
}

GpuTurn::~GpuTurn() {
  auto it = t_held_turns.find(path_);
  if (it != t_held_turns.end() && --it->second <= 0) t_held_turns.erase(it);
  if (!outer_) return;
  const double held = seconds_between(granted_, std::chrono::steady_clock::now());
  lock_.unlock();
  std::lock_guard<std::mutex> lock(g_totals_mu);
  ++g_totals.turns;
  g_totals.waited_seconds += waited_;
  g_totals.held_seconds += held;
}

GpuTurn::Totals GpuTurn::process_totals() {
  std::lock_guard<std::mutex> lock(g_totals_mu);
  return g_totals;
}

}  // namespace gauntlet
