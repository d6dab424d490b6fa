// What the timing gate times the candidate against, the timed runs against each, and their figures.
#pragma once
#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gauntlet/cases/gate.h"
#include "gauntlet/common/timing.h"

namespace gauntlet::timing_gate {

// What the candidate is timed against, one timed run each. A native kernel: the op's ATen
// implementation (the worker's library_baseline.cpp). A Python module (docs/modules.md): eager
// Model (the module's reference class with the candidate's weights), torch.compile(Model) in a
// child of its own (where torch has it and the child may run its compiler; otherwise the reply's
// baseline_error says why), and the library op when the module is mapped to an op schema.
struct Baseline {
  std::string op;     // TimeRequest::baseline_op
  std::string name;   // for the report
  bool own_child = false;
};

std::vector<Baseline> baselines_for(const GateContext& ctx);

// One dtype's input sets as they are timed: the request, and each baseline's run.
struct TimedRuns {
  std::vector<Baseline> baselines;
  wire::TimeRequest req;
  std::vector<wire::TimeReply> reps;  // one per baseline
  std::vector<int> retimed;           // per baseline: the retimes of an unsteady run
  bool gpu_shared = false;            // a clock section found a child past its turn on the device
};

// Where the gate's time goes (evidence "host_seconds"): only "clock" holds the device alone.
struct HostSeconds {
  double prepare = 0, child = 0, clock = 0, judge = 0;
};
using SteadyClock = std::chrono::steady_clock;
inline double seconds_since(SteadyClock::time_point t) {
  return std::chrono::duration<double>(SteadyClock::now() - t).count();
}

// One Time exchange; a reply the parent cannot decode is a crash (protocol violation), a
// candidate's failure code its error or out-of-memory, a code of 100 or more the harness's.
Outcome time_once(WorkerSession& session, const wire::TimeRequest& req, wire::TimeReply* rep);

// Times again each first-child run that is unsteady (timing::unsteady), at most kRetimes more
// times, keeping the steadiest attempt. A run whose timed calls differed from the verified
// outputs is kept as it is: that is the candidate's failure, not noise.
Outcome retime_unsteady(WorkerSession& session, wire::TimeRequest req, const std::vector<Baseline>& baselines,
                        std::vector<wire::TimeReply>* reps, std::vector<int>* retimed);

std::string fmt(const char* f, double a);
nlohmann::json summary_json(const timing::Summary& s);

// Each baseline's figures: evidence "baseline"/"speedup" for the first that ran ("baseline_error"
// when none did), its part of *summary; returns every baseline's entry (evidence "baselines").
nlohmann::json baseline_figures(const TimedRuns& timed, nlohmann::json* evidence, std::string* summary);

// Retimes and steadiness of the first child's runs, into *evidence and *summary.
void steadiness_figures(const TimedRuns& timed, size_t sets, nlohmann::json* evidence, std::string* summary);

}  // namespace gauntlet::timing_gate
