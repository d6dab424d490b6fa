// One audit lane: a process of its own verifying kernels one at a time into the results database.
#pragma once
#include <atomic>
#include <map>
#include <string>
#include <vector>

#include "gauntlet/audit.h"
#include "gauntlet/results_db.h"

namespace gauntlet {

struct AuditWork {
  CorpusEntry entry;
  KernelKey key;
  std::map<std::string, GateVerdict> known;  // stored by an earlier run: not run again
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
  int progress_fd = -1;                      // "g <status>", "k <verdict>", "o <ns>" lines
};

// Exit status of a lane process: 0 done, 3 the database failed (stops), 4 some kernel hit a harness
// error (left incomplete, the lane went on).
int run_lane(const LaneConfig& config);

}  // namespace gauntlet
