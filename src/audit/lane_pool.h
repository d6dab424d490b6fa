// An audit's lane processes: their shared counters and locks, forking them, following their progress.
#pragma once
#include <sys/types.h>

#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "audit_lane.h"
#include "audit_progress.h"

namespace gauntlet {

// Time the audit spends on its own bookkeeping (discovery, database, summary), beside the gates.
struct Overhead {
  std::atomic<int64_t> ns{0};
  struct Scope {
    Overhead& o;
    const std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
    explicit Scope(Overhead& overhead) : o(overhead) {}
    ~Scope() { o.ns += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count(); }
  };
};

// SIGINT, SIGTERM and SIGHUP, blocked in the audit's parent and read from a signalfd: the parent is
// woken in its progress loop, tells the lanes (which kill their children and exit) and then
// says, in one line, how to resume. Blocked from the start, so that no thread takes them.
struct InterruptWatch {
  int fd = -1;
  sigset_t both;
  InterruptWatch();
  ~InterruptWatch();
  int take() const;  // the signal received, 0 when none is pending
};

// What the lanes reported once all of them exited.
struct LanesEnded {
  int lane_failures = 0;  // lanes that stopped on a harness error
  std::string db_error;   // the first failed write a lane reported: the audit stops there
  int64_t lane_overhead_ns = 0;
  int gates_taken = 0;    // run by a CPU lane for another (work stealing)
};

class LanePool {
 public:
  ~LanePool();
  // The lanes for `cpu` and `gpu` work (which must outlive the pool): --jobs CPU lanes with their
  // host lock and work stealing, --gpu-jobs per GPU. False with *error when the machine refuses
  // shared memory, a pipe or a lock file.
  bool set_up(const AuditOptions& o, const std::vector<std::string>& gates, const std::vector<int>& gpus,
              const std::vector<AuditWork>& cpu, const std::vector<AuditWork>& gpu, std::string* error);
  // Forks every lane; the parent keeps only the progress pipe's reading end.
  void start(const InterruptWatch& watch);
  // Draws the progress until every lane has exited; a signal (kept in *sig) or a failed write
  // stops the lanes, and `stop_builder` the build-ahead lane.
  LanesEnded follow(AuditProgress& progress, const InterruptWatch& watch, int* sig,
                    const std::function<void()>& stop_builder, const std::string& db_path);
  // Unmaps the shared memory and closes the lock files (after the lanes ended).
  void release();

 private:
  bool open_lock_pair(std::string* lock, std::string* turnstile);
  void* shared_ = nullptr;  // the two work counters and the lent slots
  size_t shared_bytes_ = 0;
  void* shares_ = nullptr;  // one LaneShare per CPU lane (work stealing)
  size_t shares_bytes_ = 0;
  std::vector<int> lock_fds_;
  std::vector<LaneConfig> lanes_;
  std::vector<pid_t> pids_;
  int progress_pipe_[2] = {-1, -1};
};

}  // namespace gauntlet
