// Timing's input sets made ahead: their inputs, fp64 oracles and request arguments, on a thread of
// their own while the twelve correctness gates run (Gate::prepare_ahead).
#pragma once
#include <atomic>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gauntlet/cases/gate.h"

namespace gauntlet::timing_gate {

// One input set as the timing gate's prepare step makes it.
struct PreparedSet {
  CaseRun run;                  // the case, its inputs and its oracle
  std::vector<wire::Arg> args;  // the set as the TimeRequest carries it
};

// Makes a set's inputs, oracle and arguments (false: the oracle rejected the set, *error says why).
bool prepare_set(const GateContext& ctx, const Case& c, PreparedSet* out, std::string* error);

// The sets made ahead, keyed by their case (case_to_json): timing runs only after the twelve
// gates, and only for kernels that pass them, so its sets' fp64 oracles (about a second of host
// work a kernel at GPU sizes) are otherwise the last thing between a kernel and its verdict. A
// set is used only where its case is exactly the one the gate asks for, so a preparation made
// under any other seed, budget or contract is never judged against.
class PreparedAhead {
 public:
  PreparedAhead() = default;
  PreparedAhead(const PreparedAhead&) = delete;
  PreparedAhead& operator=(const PreparedAhead&) = delete;
  // Asks the thread to stop after its current set, then waits for it (a skipped timing gate).
  ~PreparedAhead();

  // Starts making `sets` on a thread of its own; `ctx` is copied (its references must outlive this).
  void start(const GateContext& ctx, std::vector<Case> sets);
  // Waits for the thread, then moves out the set made for exactly `c`; nullopt when none was
  // (not started, stopped early, another case, the oracle refused it: the caller makes it then).
  std::optional<PreparedSet> take(const Case& c);
  // The thread's seconds (evidence), once take() has waited for it.
  double seconds() const { return seconds_; }

 private:
  void join();
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::map<std::string, PreparedSet> made_;  // the thread's alone until join()
  double seconds_ = 0;
};

}  // namespace gauntlet::timing_gate
