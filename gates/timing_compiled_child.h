// The timing gate's torch.compile(Model) baseline, timed in a child of its own.
#pragma once
#include <optional>
#include <string>

#include "gauntlet/cases/gate.h"
#include "timing_baselines.h"

namespace gauntlet::timing_gate {

// Times each baseline of `timed` that has a child of its own, in a fresh child of gate `gate`;
// `signature` is the first child's (it says when torch.compile cannot run). A baseline that
// cannot run there gets its reply's baseline_error; the candidate's own error in that child is
// returned (it is the candidate's verdict). Adds to host->child and host->clock.
std::optional<Outcome> time_compiled_baselines(GateContext& ctx, const std::string& gate,
                                               const std::string& signature, const wire::LoadRequest& load,
                                               TimedRuns* timed, HostSeconds* host);

}  // namespace gauntlet::timing_gate
