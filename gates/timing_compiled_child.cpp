// The timing gate's torch.compile(Model) baseline: a child of its own per compiled baseline, whose failures cost only that baseline.
#include "timing_compiled_child.h"

#include <memory>

#include "timing_device.h"

namespace gauntlet::timing_gate {

std::optional<Outcome> time_compiled_baselines(GateContext& ctx, const std::string& gate,
                                               const std::string& signature, const wire::LoadRequest& load,
                                               TimedRuns* timed, HostSeconds* host) {
  const std::vector<Baseline>& baselines = timed->baselines;
  std::vector<wire::TimeReply>& reps = timed->reps;
  // The module's child says when it cannot time torch.compile(Model) (no torch.compile, or a CPU
  // child that may not run a compiler): then no child is started for it.
  const std::string no_compile = "\nno-compiled-baseline: ";
  const size_t no_compile_at = signature.find(no_compile);
  // torch.compile(Model) in a child of its own: compiling may take most of a gate's timeout,
  // and a child that times out or dies while compiling costs the baseline, not the candidate
  // (the candidate's own errors, reported in the reply's code, are still its own).
  for (size_t b = 0; b < baselines.size(); ++b) {
    if (!baselines[b].own_child) continue;
    if (no_compile_at != std::string::npos) {
      reps[b].baseline_error = signature.substr(no_compile_at + no_compile.size());
      continue;
    }
    SteadyClock::time_point phase = SteadyClock::now();
    GateVerdict not_started;
    std::unique_ptr<WorkerSession> own = open_session_with(ctx, gate, &not_started, load);
    host->child += seconds_since(phase);
    if (!own) {
      reps[b].baseline_error = "its child did not start: " + not_started.message;
      continue;
    }
    phase = SteadyClock::now();
    timed->req.baseline_op = baselines[b].op;
    wire::TimeReply r;
    Outcome o = time_once(*own, timed->req, &r);
    host->clock += seconds_since(phase);
    timed->gpu_shared = timed->gpu_shared || own->gpu_shared();
    own->finish();
    if (o.kind == Outcome::Kind::Ok) reps[b] = std::move(r);
    else if (r.code > 0 && r.code < 100) return o;
    else reps[b].baseline_error = std::string("its child failed (") + category_name(o.category) + "): " + o.message;
  }
  return std::nullopt;
}

}  // namespace gauntlet::timing_gate
