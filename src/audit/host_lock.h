// The CPU lanes' host lock: shared while correctness gates run, exclusive for a measuring timing gate.
#pragma once
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <mutex>

#include "audit_lane.h"
#include "gauntlet/sandbox/file_lock.h"

namespace gauntlet {

// The host lock: shared while correctness gates run, exclusive for a timing gate that will measure.
// The turnstile keeps a waiting timing gate from being starved by lanes taking turns at the shared lock.
class HostLock {
 public:
  HostLock(const LaneConfig& c) : on_(c.host_lock) {
    if (!on_) return;
    lock_ = open(c.lock_path.c_str(), O_RDWR | O_CLOEXEC);
    turnstile_ = open(c.turnstile_path.c_str(), O_RDWR | O_CLOEXEC);
    on_ = lock_ >= 0 && turnstile_ >= 0;
  }
  ~HostLock() {
    if (lock_ >= 0) close(lock_);
    if (turnstile_ >= 0) close(turnstile_);
  }
  void shared() {
    if (!on_) return;
    take(turnstile_, LOCK_EX);
    take(lock_, LOCK_SH);
    flock(turnstile_, LOCK_UN);
  }
  // The shared lock for each running gate of this lane (gate threads): the first gate takes it,
  // the last one out releases it. One description per lane, so the count lives here.
  void gate_enter() {
    if (!on_) return;
    std::unique_lock<std::mutex> lock(gates_mu_);
    if (gates_++ == 0) shared();
  }
  void gate_leave() {
    if (!on_) return;
    std::unique_lock<std::mutex> lock(gates_mu_);
    if (--gates_ == 0) release();
  }
  void exclusive() {
    if (!on_) return;
    take(turnstile_, LOCK_EX);
    take(lock_, LOCK_EX);
  }
  void release() {
    if (!on_) return;
    flock(lock_, LOCK_UN);
    flock(turnstile_, LOCK_UN);
  }

 private:
  static void take(int fd, int op) { flock_retrying(fd, op); }
  bool on_;
  int lock_ = -1, turnstile_ = -1;
  std::mutex gates_mu_;
  int gates_ = 0;
};

struct Held {
  HostLock& lock;
  Held(HostLock& l, bool exclusive) : lock(l) { exclusive ? l.exclusive() : l.shared(); }
  ~Held() { lock.release(); }
};

}  // namespace gauntlet
