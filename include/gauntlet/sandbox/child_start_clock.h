// A CUDA child's start on one clock with its parent's: how long the Load frame and the reply spent between them.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "gauntlet/common/monotonic_clock.h"  // monotonic_ns: the clock both sides stamp with

namespace gauntlet {

// The child's stamps (CLOCK_MONOTONIC ns) from its device description's "startup_clock_ns" object
// (worker/startup_phases.h): when it read the Load frame and when its reply was ready. False when
// absent or malformed (a CPU child, an older worker).
bool child_start_stamps(const std::string& device_info, int64_t* load_read_ns, int64_t* ready_ns);

// This process's CUDA children, summed since it began: a child's spawn, less its own phases and the
// launcher's, is these two intervals plus the parent's own work around them (issue 18's
// unattributed part of a spawn).
struct ChildStartTotals {
  long children = 0;
  double load_in_flight_seconds = 0;   // the parent wrote the Load frame -> the child read it
  double reply_in_flight_seconds = 0;  // the child's reply was ready -> the parent had read it
  double load_total_seconds = 0;       // the parent's whole load(): Load written -> reply read
};

// Adds one child's intervals (the parent's stamps: Load written, reply read) when its description
// carries the child's; stamps out of order (a clock the two do not share) are dropped. Thread-safe.
void note_child_start(int64_t load_sent_ns, int64_t reply_read_ns, const std::string& device_info);
ChildStartTotals child_start_totals();

// The child's start steps from its stamps, in order: child_cuda_init, child_context (to the first
// copy back), child_first_poison, child_preload; each kept only where it falls inside the parent's
// wait (one clock for both). Empty for a CPU child or an older worker.
struct ChildStartStep {
  const char* kind;
  int64_t begin_ns, end_ns;
};
std::vector<ChildStartStep> child_start_steps(int64_t load_sent_ns, int64_t reply_read_ns, const std::string& device_info);

// With tracing on (common/trace.h): the parent's load as an interval, and the child's start steps
// from its stamps (CUDA init, the context's creation, the first poisoning, the preload), each kept
// only where it falls inside the parent's wait (one clock for both).
void trace_child_start(int64_t load_sent_ns, int64_t reply_read_ns, const std::string& device_info,
                       const std::string& detail);

}  // namespace gauntlet
