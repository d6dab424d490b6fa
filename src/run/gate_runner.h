// One kernel's gates: each in a slot and its own children, shared errors rerun alone, crashes confirmed.
#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gauntlet/cases/gate.h"
#include "gauntlet/run/verify.h"

namespace gauntlet {

class GpuSlot;  // gauntlet/sandbox/gpu_slots.h

// Why no gate of a kernel can run (its build failed, its contract is unknown, its dtypes leave
// nothing); empty when they can.
struct Unrunnable {
  const BuildResult& build;
  bool unknown_contract = false;
  std::string why_unknown;  // the problem binding's why_not
  bool no_dtypes = false;
  bool any() const { return !build.ok || unknown_contract || no_dtypes; }
};

class GateRunner {
 public:
  // `base` is every gate's context (each gate runs on a copy); the children's sandbox note comes
  // back into it.
  GateRunner(std::vector<std::string> names, const VerifyOptions& options, GateContext& base, Unrunnable unrunnable,
             bool cuda);
  // The verdicts in `names`' order: the correctness gates in parallel up to the slots, then timing.
  std::vector<GateVerdict> run_all();

 private:
  struct GateRun;  // one gate's run and what its children measured
  // `queued`: called once the gate is in the slots' line (GateSlots::acquire).
  void run_one(size_t i, const std::vector<std::string>& earlier_failures, bool exclusive,
               const std::function<void()>& queued = nullptr);
  GateVerdict verdict_without_running(const std::string& name) const;
  bool run_in_slot(size_t i, const std::vector<std::string>& earlier_failures, bool exclusive, GateVerdict* v,
                   const std::function<void()>& queued = nullptr);
  GateVerdict run_in_section(GateRun& run);
  std::unique_ptr<GpuSlot> gpu_gate_slot(const std::string& gate) const;
  void rerun_shared_error_alone(GateRun& run, bool* exclusive, GateVerdict* v);
  void confirm_if_needed(GateRun& run, GateVerdict* v);
  void record_time(const GateRun& run, GateVerdict* v) const;
  GateContext copy_of_base();

  const std::vector<std::string> names_;
  const VerifyOptions& options_;
  GateContext& base_;
  const Unrunnable unrunnable_;
  const bool cuda_;
  GateSlots own_slots_;
  GateSlots& slots_;
  std::mutex report_mu_;  // progress lines, on_gate, the sandbox note
  std::atomic<bool> own_hang_shown_{false}, own_oom_shown_{false};
  std::atomic<bool>& hang_shown_alone_;
  std::atomic<bool>& oom_shown_alone_;
  std::vector<GateVerdict> verdicts_;
  std::vector<bool> ran_;
  std::vector<char> taken_;  // by another lane (options.claim)
  // Gates made before the others started, to prepare ahead (Gate::prepare_ahead), by index.
  std::vector<std::unique_ptr<Gate>> ahead_;
};

// Whether the gates that run after the others prepare while those run (Gate::prepare_ahead):
// GAUNTLET_PREPARE_AHEAD=1 always, =0 never; unset, for CUDA kernels only. There the parent's
// CPUs wait on the driver meanwhile; on the CPU the correctness gates' children want them, and a
// kernel that fails one would have paid for sets never timed.
bool prepare_ahead_wanted(bool cuda);
// GAUNTLET_GATE_START_ORDER=table: a kernel's gates start in the gate table's order, as before the
// fortieth session, instead of lowest start rank first (for measurements).
bool gates_start_in_table_order();

}  // namespace gauntlet
