// One audit lane: a process of its own verifying kernels one at a time into the results database.
#pragma once
#include <atomic>
#include <map>
#include <string>
#include <vector>

#include "gauntlet/audit/audit.h"
#include "gauntlet/audit/results_db.h"

namespace gauntlet {

struct AuditWork {
  CorpusEntry entry;
  KernelKey key;
  std::map<std::string, GateVerdict> known;  // stored by an earlier run: not run again
  bool run_check = false;   // run the field's standard check (--standard-check; none stored yet)
  bool check_only = false;  // complete in the database: only its standard check is missing
};

// What a CPU lane shares with the others (MAP_SHARED memory), so that a lane with nothing left to
// take can take gates of the kernel another lane is still verifying (work stealing). RapidCheck
// serializes a process's searching gates (audit_lane.cpp), so a kernel that hangs in six of them
// costs six timeouts one after another in its own lane, and only another process can run them
// side by side.
struct LaneShare {
  // (kernel index + 1) << 32 | a bit per gate (LaneConfig::gates index) claimed by some lane;
  // 0 while the lane verifies no kernel. Only the owner changes the kernel; claims are CAS/or.
  std::atomic<uint64_t> claims{0};
  // (kernel index + 1) << 32 | a bit per gate another lane took and whose verdict it stored: the
  // kernel is named so that a taker that finishes late never marks the owner's next kernel.
  std::atomic<uint64_t> done{0};
  std::atomic<bool> hang_shown{false}, oom_shown{false};  // VerifyOptions::hang_shown_alone
};

struct LaneConfig {
  const AuditOptions* options = nullptr;
  std::vector<std::string> gates;            // the audit's gates, in order
  const std::vector<AuditWork>* work = nullptr;
  std::atomic<size_t>* next = nullptr;       // shared with the other lanes (MAP_SHARED memory)
  // CPU lanes: gate slots lent by lanes that found nothing left to take (MAP_SHARED memory); a
  // lane adds its --jobs here when it runs out, so the last kernels use the whole machine.
  std::atomic<int>* lent_slots = nullptr;
  SandboxOptions sandbox;                    // gpu_index set for a GPU lane
  // CPU lanes share the machine: the timing gate takes an exclusive host lock (these two files),
  // correctness gates a shared one. GPU lanes take neither (the timing gate serializes its timed
  // loop per GPU itself).
  bool host_lock = false;
  std::string lock_path, turnstile_path;
  int progress_fd = -1;                      // "g <status>", "k <verdict>", "s" (a gate taken), "o <ns>"
  LaneShare* shares = nullptr;               // CPU lanes with --jobs > 1: one per CPU lane
  size_t share_count = 0, self = 0;          // how many; this lane's
};

// How many gates of its kernel a lane runs at once, set on the lane's VerifyOptions: a CPU lane
// (host_lock) --jobs, a GPU lane one CPU gate at a time; a CUDA kernel --gpu-gate-jobs in either.
void set_lane_gate_jobs(const AuditOptions& options, bool host_lock, VerifyOptions* vo);

// Exit status of a lane process: 0 done, 3 the database failed (stops), 4 some kernel hit a harness
// error (left incomplete, the lane went on).
int run_lane(const LaneConfig& config);

}  // namespace gauntlet
