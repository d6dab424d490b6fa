// Host-wide locks on files (flock): threads and processes exclude each other alike (GPU turns: gpu_turn.h).
#pragma once
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
  // Without waiting: false when another description holds a conflicting lock (or on an error).
  bool try_lock(const std::string& path, Mode mode);
  void unlock();
  bool held() const { return fd_ >= 0; }

 private:
  bool acquire(const std::string& path, int op);  // open, then flock(op): LOCK_EX/LOCK_SH, maybe | LOCK_NB
  int fd_ = -1;
};

// Takes `op` (LOCK_SH, LOCK_EX) on an open descriptor, retrying on EINTR; false on another error.
bool flock_retrying(int fd, int op);

}  // namespace gauntlet
