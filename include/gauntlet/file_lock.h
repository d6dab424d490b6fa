// Host-wide locks on files (flock), and the GPU turn built on them: one sandbox executes on a GPU at a time.
#pragma once
#include <chrono>
#include <string>

namespace gauntlet {

// flock(2) on one open description of `path`: threads and processes exclude each other alike
// (every FileLock opens its own description). Waits through EINTR. A lock file that cannot be
// opened leaves the lock unheld (held() false): callers run unserialized rather than not at all.
class FileLock {
 public:
  enum class Mode { Shared, Exclusive };
  FileLock() = default;
  FileLock(const std::string& path, Mode mode) { lock(path, mode); }
  ~FileLock() { unlock(); }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  bool lock(const std::string& path, Mode mode);
  void unlock();
  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// Takes `op` (LOCK_SH, LOCK_EX) on an open descriptor, retrying on EINTR; false on another error.
bool flock_retrying(int fd, int op);

// The lock file of a GPU's turns: named after the GPU as the children see it (an index or the
// UUID from CUDA_VISIBLE_DEVICES), so several gauntlet processes (audit lanes, Slurm tasks on one
// node, parallel verifies) share it.
std::string gpu_turn_path(int gpu_index);

// One sandbox's turn on a GPU: while held, no other gauntlet child executes there. CUDA contexts
// of several processes time-slice a GPU, which made every gate 20-50x slower on the H200 and
// would put other processes' work inside the timing gate's clocks; children that only start
// (CUDA init, loading the kernel) or wait for the parent need no turn, so they overlap freely.
// Re-entrant per thread: a turn taken while the same thread holds one on that GPU is a no-op (the
// timing gate holds its turn across the timed loop, whose exchanges take turns themselves).
class GpuTurn {
 public:
  explicit GpuTurn(int gpu_index);
  ~GpuTurn();
  GpuTurn(const GpuTurn&) = delete;
  GpuTurn& operator=(const GpuTurn&) = delete;
  // Seconds spent waiting for the turn (0 when re-entered); a child's deadline is extended by it.
  double waited_seconds() const { return waited_; }

  // This process's outer turns so far, for "where the time goes" (verify reports them per kernel).
  struct Totals {
    long turns = 0;
    double waited_seconds = 0, held_seconds = 0;
  };
  static Totals process_totals();

 private:
  std::string path_;
  FileLock lock_;
  double waited_ = 0;
  bool outer_ = false;
  std::chrono::steady_clock::time_point granted_;
};

}  // namespace gauntlet
