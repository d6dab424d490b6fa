// What a kernel report says of where it ran: host, toolchain, sandbox, and the GPU's turns and phases.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "gauntlet/sandbox/child_start_clock.h"
#include "gauntlet/sandbox/gpu_turn.h"
#include "gauntlet/sandbox/sandbox.h"

namespace gauntlet {

// The report's "environment": versions, host, device, and the sandbox the children came from.
nlohmann::json environment_json(const Launcher& launcher, const std::string& sandbox_note, const std::string& device);

// The process's GPU counters at one moment; a kernel's share is the difference across its gates.
struct GpuCounters {
  GpuTurn::Totals turns;
  WorkerPhaseTotals phases;
  ChildStartTotals starts;
  static GpuCounters now() { return {GpuTurn::process_totals(), worker_phase_totals(), child_start_totals()}; }
};

// Adds "gpu_turns" (and "worker_phases" when a native CUDA child ran cases, "child_starts" when
// CUDA children stamped their start) since `before`.
void add_gpu_usage(nlohmann::json* environment, const GpuCounters& before, const Launcher& launcher);

}  // namespace gauntlet
