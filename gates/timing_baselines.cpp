// The timing gate's baselines: which ones, the Time exchange and retiming, and each baseline's speedup and steadiness.
#include "timing_baselines.h"

#include <algorithm>
#include <cstdio>

#include "gauntlet/oracle/module_oracle.h"

namespace gauntlet::timing_gate {

std::vector<Baseline> baselines_for(const GateContext& ctx) {
  if (!is_python_module(ctx.manifest)) return {{ctx.schema.name, "ATen " + ctx.schema.name}};
  std::vector<Baseline> b = {{"module:eager", "eager Model"}};
  if (!is_module_schema(ctx.schema)) b.push_back({ctx.schema.name, "ATen " + ctx.schema.name});
  b.push_back({"module:compiled", "torch.compile(Model)", true});
  return b;
}

Outcome time_once(WorkerSession& session, const wire::TimeRequest& req, wire::TimeReply* rep) {
  std::string payload, why;
  // The child holds the GPU from the moment its sets are decoded until its verified outputs are
  // on the host: the sets and the reply crossing the pipe leave the device to others, while the
  // timed loop has it to itself (the turn is never given up early: the loop is bounded by its
  // budget and the child by --timeout).
  wire::TimeRequest asking = req;  // the tensors are shared, not copied
  asking.turn_handshake = true;
  Outcome o = session.exchange(wire::FrameType::Time, wire::encode(asking), wire::FrameType::TimeReply, &payload,
                               WorkerSession::Turn::WorkerAsks);
  if (o.kind == Outcome::Kind::Ok && !wire::decode(payload, rep, &why)) {
    o.kind = Outcome::Kind::Died;
    o.category = Category::Crash;
    o.message = "protocol violation: malformed timing reply (" + why + ")";
  }
  if (o.kind == Outcome::Kind::Ok && rep->code != 0) {
    o.kind = rep->code == 2 ? Outcome::Kind::OutOfMemory : rep->code >= 100 ? Outcome::Kind::HarnessError
                                                                              : Outcome::Kind::KernelError;
    o.category = rep->code == 2 ? Category::OutOfMemory : rep->code >= 100 ? Category::HarnessError
                                                                            : Category::RuntimeError;
    o.message = rep->message;
  }
  return o;
}

Outcome retime_unsteady(WorkerSession& session, wire::TimeRequest req, const std::vector<Baseline>& baselines,
                        std::vector<wire::TimeReply>* reps, std::vector<int>* retimed) {
  for (int attempt = 0; attempt < timing::kRetimes; ++attempt) {
    double fastest = 0;
    for (size_t b = 0; b < reps->size(); ++b) {
      const double m = timing::steadiness((*reps)[b].candidate_ms, req.sets.size()).median;
      if (!baselines[b].own_child && m > 0 && (fastest == 0 || m < fastest)) fastest = m;
    }
    bool any = false;
    for (size_t b = 0; b < reps->size(); ++b) {
      wire::TimeReply& r = (*reps)[b];
      if (baselines[b].own_child || r.mismatches > 0) continue;
      const timing::Steadiness was = timing::steadiness(r.candidate_ms, req.sets.size());
      if (!timing::unsteady(was, fastest)) continue;
      any = true;
      ++(*retimed)[b];
      req.baseline_op = baselines[b].op;
      wire::TimeReply again;
      Outcome o = time_once(session, req, &again);
      if (o.kind != Outcome::Kind::Ok) return o;
      if (again.mismatches > 0 || timing::steadier(timing::steadiness(again.candidate_ms, req.sets.size()), was, fastest))
        r = std::move(again);
    }
    if (!any) break;
  }
  return Outcome{};
}

std::string fmt(const char* f, double a) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, a);
  return buf;
}

nlohmann::json summary_json(const timing::Summary& s) {
  return {{"n", s.n}, {"median_ms", s.median}, {"p25_ms", s.p25}, {"p75_ms", s.p75}, {"min_ms", s.min},
          {"ci95_ms", {s.ci_low, s.ci_high}}, {"relative_iqr", s.spread()}};
}

nlohmann::json baseline_figures(const TimedRuns& timed, nlohmann::json* evidence, std::string* summary) {
  const std::vector<Baseline>& baselines = timed.baselines;
  const std::vector<wire::TimeReply>& reps = timed.reps;
  // Each baseline's speedup is against the candidate's median in the same interleaved run. The
  // first baseline that ran is "baseline"/"speedup" (the library op for a native kernel, eager
  // Model for a module); a module's every baseline is in "baselines", with the reason for any
  // that did not run.
  nlohmann::json all = nlohmann::json::array();
  bool have_primary = false;
  for (size_t b = 0; b < reps.size(); ++b) {
    const wire::TimeReply& r = reps[b];
    nlohmann::json e = {{"name", baselines[b].name}, {"op", baselines[b].op}};
    if (r.baseline_ms.empty()) {
      e["error"] = r.baseline_error;
      all.push_back(e);
      continue;
    }
    const timing::Summary base = timing::summarize(r.baseline_ms);
    const double run_median = timing::summarize(r.candidate_ms).median;
    const double speedup = run_median > 0 ? base.median / run_median : 0;
    nlohmann::json s = summary_json(base);
    s["name"] = baselines[b].name;
    for (auto& [k, x] : s.items()) e[k] = x;
    e["iterations"] = r.iterations;
    e["candidate_median_ms"] = run_median;
    e["speedup"] = speedup;
    all.push_back(e);
    if (baselines.size() == 1)
      *summary += fmt(", ATen %.4g ms", base.median) + fmt(", speedup %.2fx", base.median / std::max(run_median, 1e-12));
    else
      // A baseline timed in a child of its own has its own candidate median beside it.
      *summary += ", " + baselines[b].name + fmt(" %.4g ms", base.median) +
                  (baselines[b].own_child ? fmt(" against the candidate's %.4g ms in its own child", run_median) : "") +
                  fmt(" (speedup %.2fx)", speedup);
    if (!have_primary) {
      (*evidence)["baseline"] = s;
      (*evidence)["speedup"] = speedup;
      have_primary = true;
    }
  }
  if (!have_primary) (*evidence)["baseline_error"] = reps[0].baseline_error;
  return all;
}

void steadiness_figures(const TimedRuns& timed, size_t sets, nlohmann::json* evidence, std::string* summary) {
  const std::vector<Baseline>& baselines = timed.baselines;
  const std::vector<wire::TimeReply>& reps = timed.reps;
  // Noise is reported, not failed: the figures of a run still unsteady after its retimes are
  // the machine's as much as the kernel's.
  int retimes = 0;
  for (int n : timed.retimed) retimes += n;
  double fastest = 0, worst_spread = 0;
  std::vector<timing::Steadiness> steady(reps.size());
  for (size_t b = 0; b < reps.size(); ++b) {
    steady[b] = timing::steadiness(reps[b].candidate_ms, sets);
    if (!baselines[b].own_child && steady[b].median > 0 && (fastest == 0 || steady[b].median < fastest))
      fastest = steady[b].median;
  }
  bool still_unsteady = false;
  for (size_t b = 0; b < reps.size(); ++b)
    if (!baselines[b].own_child && timing::unsteady(steady[b], fastest)) {
      still_unsteady = true;
      worst_spread = std::max(worst_spread, steady[b].spread);
    }
  (*evidence)["retimed_runs"] = retimes;
  (*evidence)["unsteady"] = still_unsteady;
  if (still_unsteady)
    *summary += fmt(", unsteady (candidate IQR %.0f%% within an input set", 100 * worst_spread) + " after " +
                std::to_string(reps.size() + size_t(retimes)) + " timed runs): figures uncertain";
}

}  // namespace gauntlet::timing_gate
