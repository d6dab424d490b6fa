// Gate 13, timing: the candidate against the library op, interleaved, L2 flushed, outputs re-checked, physics-checked.
#include <algorithm>
#include <iterator>
#include <memory>
#include <optional>

#include "gauntlet/cases/gate.h"
#include "gauntlet/cases/judge.h"
#include "gauntlet/common/timing.h"
#include "gauntlet/oracle/module_oracle.h"
#include "gauntlet/sandbox/gpu_turn.h"
#include "timing_ahead.h"
#include "timing_baselines.h"
#include "timing_compiled_child.h"
#include "timing_device.h"
#include "timing_shape.h"

namespace gauntlet {
namespace {

using namespace timing_gate;  // the gate's own pieces, gates/timing_*.h

constexpr const char* kGate = "timing";
// CPU: candidate and baseline both single-threaded. An intra-op pool on a machine that runs
// other gates (or other jobs) at the same time measures the scheduler: a thread preempted at a
// barrier costs a whole time slice (measured: ATen relu 0.1 ms alone, 16 ms with 2 threads
// beside a build on 2 cores).
constexpr int kCores = 1;

// "" when every output is within tolerance of the oracle, else the first failure's evidence; the
// outputs first in the oracle's order where the schema leaves one free (topk's tied indices).
std::string judge_all(GateContext& ctx, const CaseRun& run, const std::vector<at::Tensor>& raw) {
  std::vector<at::Tensor> outs = raw;
  if (std::string why = match_call_to_oracle(ctx, run.inputs, run.c.attrs, run.oracle.outputs, &outs); !why.empty())
    return why;
  const DType dtype = case_dtype(ctx.schema, run.c);
  auto tol = ctx.schema.tolerance.find(dtype);
  if (tol == ctx.schema.tolerance.end()) return std::string("the schema declares no tolerance for ") + dtype_name(dtype);
  if (outs.size() != run.oracle.outputs.size()) return "output count differs from the oracle's";
  const int64_t K = reduction_terms(ctx.schema, run.c);
  for (size_t i = 0; i < outs.size(); ++i) {
    const std::string oname = i < ctx.schema.outputs.size() ? ctx.schema.outputs[i].name : "output";
    if (!outs[i].defined() || outs[i].sizes() != run.oracle.outputs[i].sizes()) return oname + ": shape differs";
    const at::Tensor scale = i < run.oracle.scales.size() ? run.oracle.scales[i] : at::Tensor();
    Judgement j = judge_output(oname, outs[i], run.oracle.outputs[i], scale,
                               expected_output_dtype(ctx.schema, i, run.c), tol->second, K);
    if (!j.pass) return j.message;
  }
  return "";
}

GateVerdict fail(GateContext& ctx, CaseRun run, const std::vector<at::Tensor>& outs, const std::string& message) {
  GateVerdict v;
  v.name = kGate;
  v.status = Status::Fail;
  v.category = Category::WrongResult;
  v.message = "case " + run.c.label + ": " + message;
  run.outcome.kind = Outcome::Kind::Ok;
  run.outcome.reply.calls.assign(1, wire::CallOutputs{});
  run.outcome.reply.calls[0].outputs = outs;
  note_outputs(v, run);
  v.replay = write_replay(ctx, kGate, run, v);
  return v;
}

// One dtype's input sets on their way through time_sets.
struct SetTiming {
  SetTiming(GateContext& c, const std::vector<Case>& s, bool on_cuda, PreparedAhead& a)
      : ctx(c), sets(s), cuda(on_cuda), ahead(a) {}
  GateContext& ctx;
  const std::vector<Case>& sets;
  const bool cuda;
  PreparedAhead& ahead;       // sets made while the correctness gates ran, where they were
  int prepared_ahead = 0;     // of `sets`, those taken from `ahead`
  std::vector<CaseRun> runs;  // each set's inputs and fp64 oracle
  TimedRuns timed;
  wire::LoadRequest load;
  std::string device_name;
  wire::DevicePeaks peaks;
  HostSeconds host;
};

// A candidate's error in any timed run is the candidate's verdict.
GateVerdict candidate_error(SetTiming& st, const Outcome& o) {
  st.runs[0].outcome = o;
  GateVerdict e = verdict_from_outcome(st.ctx, kGate, st.runs[0]);
  e.cases = int(st.sets.size());
  e.replay = write_replay(st.ctx, kGate, st.runs[0], e);
  return e;
}

// Inputs and the fp64 oracle of every set (the untimed outputs are judged against it), and the
// request that times them, each set taken from those made ahead where it is there; false with *v a
// harness error when the oracle rejects a set.
bool prepare(SetTiming& st, const Targets& t, GateVerdict* v) {
  GateContext& ctx = st.ctx;
  wire::TimeRequest& req = st.timed.req;
  st.runs.resize(st.sets.size());
  for (size_t s = 0; s < st.sets.size(); ++s) {
    const Case& set = st.sets[s];
    PreparedSet made;
    if (std::optional<PreparedSet> ahead = st.ahead.take(set)) {
      made = std::move(*ahead);
      ++st.prepared_ahead;
    } else if (std::string error; !prepare_set(ctx, set, &made, &error)) {
      v->status = Status::HarnessError;
      v->category = Category::HarnessError;
      v->message = "the oracle rejected the timing case " + set.label + ": " + error;
      return false;
    }
    st.runs[s] = std::move(made.run);
    req.sets.push_back(std::move(made.args));
  }
  st.timed.baselines = baselines_for(ctx);
  req.max_iterations = std::max<uint32_t>(t.max_iterations * uint32_t(ctx.budget), req.min_iterations);
  req.budget_seconds = t.budget_seconds * ctx.budget;
  req.flush_bytes = st.cuda ? t.flush_bytes : 0;
  req.threads = kCores;
  st.load.intra_op_threads = kCores;
  return true;
}

// Whether a child is running past its GPU turn's bound on this kernel's device right now (gpu_turn.h).
bool overrun_in_progress_now(const SetTiming& st) {
  const std::string lock = gpu_turn_lock_for(st.ctx.launcher.options(), st.cuda);
  return !lock.empty() && GpuTurn::overrun_in_progress(lock);
}

// Every baseline but a torch.compile one timed in the first child, unsteady runs timed again, and
// the device's peaks; a candidate's error there is its verdict.
std::optional<GateVerdict> time_in_first_child(SetTiming& st, WorkerSession& session) {
  const std::vector<Baseline>& baselines = st.timed.baselines;
  wire::TimeRequest& req = st.timed.req;
  std::vector<wire::TimeReply>& reps = st.timed.reps;
  // Only the timed loop and the peak measurement need the device alone: each exchange holds the
  // GPU turn for its device work (time_once, device_peaks); inputs, oracles, the child's start,
  // the pipe and the judging below run beside other work.
  const SteadyClock::time_point phase = SteadyClock::now();
  // One timed run per baseline (a native kernel has one: the library op), each interleaving the
  // candidate with that baseline. All but a torch.compile baseline share the first child.
  reps.assign(baselines.size(), wire::TimeReply{});
  for (size_t b = 0; b < baselines.size(); ++b) {
    if (baselines[b].own_child) continue;
    req.baseline_op = baselines[b].op;
    wire::TimeRequest asked = req;
    // Beside an overrunning child the figures are uncertain however long the loop runs
    // (time-slicing only adds time): the minimum iterations keep the loop's re-checks of the
    // outputs without holding a turn slot for a second of figures nobody can use (on an H100,
    // 1.6 s a kernel beside a spinner instead of 0.09 alone).
    if (overrun_in_progress_now(st)) asked.budget_seconds = 0;
    Outcome o = time_once(session, asked, &reps[b]);
    if (o.kind != Outcome::Kind::Ok) return candidate_error(st, o);
  }
  st.timed.retimed.assign(baselines.size(), 0);
  if (!session.gpu_shared()) {  // a time-sliced run is unsteady by nature: timing it again measures the other child
    Outcome o = retime_unsteady(session, req, baselines, &reps, &st.timed.retimed);
    if (o.kind != Outcome::Kind::Ok) return candidate_error(st, o);
  }
  // Device peaks: measured once per device, cached.
  st.device_name = st.cuda ? reps[0].device : cpu_model() + " x" + std::to_string(kCores) + " thread";
  st.peaks = device_peaks(session, st.cuda, st.device_name);
  st.host.clock = seconds_since(phase);
  st.timed.gpu_shared = session.gpu_shared();
  session.finish();
  return std::nullopt;
}

// The untimed outputs judged against the oracle, and the timed calls' outputs against the
// untimed ones; the first failure is the verdict.
std::optional<GateVerdict> judge_replies(const SetTiming& st) {
  GateContext& ctx = st.ctx;
  const std::vector<Case>& sets = st.sets;
  const std::vector<CaseRun>& runs = st.runs;
  const std::vector<Baseline>& baselines = st.timed.baselines;
  const std::vector<wire::TimeReply>& reps = st.timed.reps;
  // The untimed outputs must be right (judged as the accuracy gate judges) ...
  auto judge_untimed = [&](const wire::TimeReply& r) -> std::optional<GateVerdict> {
    for (size_t s = 0; s < sets.size() && s < r.verified.size(); ++s) {
      std::string bad = judge_all(ctx, runs[s], r.verified[s]);
      if (!bad.empty()) return fail(ctx, runs[s], r.verified[s], "untimed call at the timing shape: " + bad);
    }
    return std::nullopt;
  };
  if (auto f = judge_untimed(reps[0])) return *f;
  // ... and every timed call must have returned the same bits as its set's untimed call.
  const wire::TimeReply* first_bad = nullptr;
  size_t first_bad_run = 0;
  for (size_t b = 0; b < reps.size() && !first_bad; ++b)
    if (reps[b].mismatches > 0) first_bad = &reps[b], first_bad_run = b;
  if (first_bad) {
    const size_t s = size_t(std::max(0, first_bad->first_mismatch_set));
    std::string what = std::to_string(first_bad->mismatches) + " of " +
                       std::to_string(first_bad->candidate_ms.size()) +
                       " timed calls returned outputs that differ from the same inputs' verified outputs "
                       "(first: timed call " + std::to_string(first_bad->first_mismatch_call) + ", input set " +
                       std::to_string(s);
    if (baselines.size() > 1) what += ", in the run beside " + baselines[first_bad_run].name;
    what += ")";
    if (ctx.schema.determinism == "bitwise" || s >= runs.size())
      return fail(ctx, runs[std::min(s, runs.size() - 1)], first_bad->mismatch_outputs, what);
    std::string bad = judge_all(ctx, runs[s], first_bad->mismatch_outputs);
    if (!bad.empty()) return fail(ctx, runs[s], first_bad->mismatch_outputs, what + ": " + bad);
  }
  // The later runs' untimed calls (a module's further baselines) are judged too.
  for (size_t b = 1; b < reps.size(); ++b)
    if (auto f = judge_untimed(reps[b])) return *f;
  return std::nullopt;
}

// The candidate's median and where it stands against the roofline.
struct CandidateFigures {
  timing::Summary cand;
  DType dtype;
  Cost cost;
  timing::Roofline roof;
  double seconds = 0;  // the median
  double utilization = 0;
};

// The candidate's figures, and the evidence of the timed shape, timer and device.
CandidateFigures candidate_figures(const SetTiming& st, nlohmann::json* evidence) {
  const GateContext& ctx = st.ctx;
  const std::vector<Case>& sets = st.sets;
  const std::vector<Baseline>& baselines = st.timed.baselines;
  const std::vector<wire::TimeReply>& reps = st.timed.reps;
  const wire::TimeReply& rep = reps[0];
  const wire::DevicePeaks& peaks = st.peaks;
  // The candidate's times from every run in the first child (one run for a native kernel; a
  // child of its own is another process, whose times go only into its baseline's speedup).
  std::vector<double> candidate_ms;
  for (size_t b = 0; b < reps.size(); ++b)
    if (!baselines[b].own_child)
      candidate_ms.insert(candidate_ms.end(), reps[b].candidate_ms.begin(), reps[b].candidate_ms.end());
  const timing::Summary cand = timing::summarize(candidate_ms);
  const DType dtype = case_dtype(ctx.schema, sets[0]);
  const Cost cost = cost_of(ctx.schema, sets[0]);
  const timing::Roofline roof =
      timing::roofline(cost.flops, cost.bytes, matmul_peak(peaks, dtype), peaks.copy_bytes_per_s);
  const double seconds = cand.median / 1000.0;
  const double utilization = seconds > 0 ? roof.seconds / seconds : 0;
  nlohmann::json inputs = nlohmann::json::object(), attrs = nlohmann::json::object();
  for (const TensorRecipe& r : sets[0].tensors) inputs[r.name] = {{"shape", r.shape}, {"dtype", dtype_name(r.dtype)}};
  for (const auto& [k, a] : sets[0].attrs) attrs[k] = attr_to_string(a);
  *evidence = {{"dtype", dtype_name(dtype)},
               {"case", sets[0].label},
               {"inputs", inputs},
               {"attrs", attrs},
               {"input_sets", sets.size()},
               {"timer", rep.timer},
               {"iterations", rep.iterations},
               {"l2_flush_bytes", st.timed.req.flush_bytes},
               {"candidate", summary_json(cand)},
               {"flops", cost.flops},
               {"bytes", cost.bytes},
               {"device", st.device_name},
               {"peaks", {{"copy_bytes_per_s", peaks.copy_bytes_per_s},
                          {"matmul_flops", matmul_peak(peaks, dtype)},
                          {"how", peaks.how}}},
               {"roofline", {{"seconds", roof.seconds}, {"bound", roof.bound}, {"utilization", utilization}}}};
  return {cand, dtype, cost, roof, seconds, utilization};
}

// The one-line summary: the candidate's median and spread, each baseline's speedup, how steady
// and how alone the runs were, the share of the roofline; their evidence beside it.
void summarize(const SetTiming& st, const CandidateFigures& fig, nlohmann::json* evidence, std::string* summary) {
  const GateContext& ctx = st.ctx;
  const timing::Summary& cand = fig.cand;
  *summary = std::string(dtype_name(fig.dtype)) + " " + fmt("%.4g ms", cand.median) + fmt(" (IQR %.0f%%)", 100 * cand.spread());
  const nlohmann::json all = baseline_figures(st.timed, evidence, summary);
  steadiness_figures(st.timed, st.sets.size(), evidence, summary);
  const bool gpu_shared = st.timed.gpu_shared;
  // Time-slicing with a slow kernel only adds time: uncertain figures, never a false failure.
  (*evidence)["gpu_shared"] = gpu_shared;
  if (gpu_shared)
    *summary += ", GPU shared during the timed loop with a child running past its turn bound (another "
                "kernel's, past --gpu-turn-bound, or this timed run's own, past ten times it): figures uncertain";
  if (st.timed.baselines.size() > 1) (*evidence)["baselines"] = all;
  if (is_module_schema(ctx.schema))  // cost "0": no floor, no utilization
    (*evidence)["roofline"] = {{"note", "an unmapped module has no cost model (flops, bytes): no physical floor; "
                                        "map it to an op schema for one"}};
  else if (st.peaks.copy_bytes_per_s > 0)
    *summary += fmt(", %.0f%% of roofline", 100 * fig.utilization) + " (" + fig.roof.bound + ")";
}

// A median faster than the roofline allows fails the candidate.
std::optional<GateVerdict> implausible(const SetTiming& st, const CandidateFigures& fig, const nlohmann::json& evidence) {
  const wire::DevicePeaks& peaks = st.peaks;
  const wire::TimeReply& rep = st.timed.reps[0];
  const timing::Summary& cand = fig.cand;
  const timing::Roofline& roof = fig.roof;
  const Cost& cost = fig.cost;
  const double seconds = fig.seconds;
  const DType dtype = fig.dtype;
  // Faster than physics allows: the work was not done inside the timed window.
  if (peaks.copy_bytes_per_s > 0 && roof.seconds > 0 && seconds < timing::kImplausibleFraction * roof.seconds) {
    std::vector<at::Tensor> outs = rep.verified.empty() ? std::vector<at::Tensor>{} : rep.verified[0];
    GateVerdict f = fail(st.ctx, st.runs[0], outs,
                         "implausible: median " + fmt("%.4g ms", cand.median) + " is " +
                             fmt("%.1f%%", 100 * seconds / roof.seconds) + " of the roofline time " +
                             fmt("%.4g ms", roof.seconds * 1000) + " (" + fmt("%.3g", cost.bytes) + " bytes at " +
                             fmt("%.3g B/s", peaks.copy_bytes_per_s) + ", " + fmt("%.3g", cost.flops) + " flops at " +
                             fmt("%.3g flop/s", matmul_peak(peaks, dtype)) +
                             "): the work is not inside the timed window (cached results, or work on a stream "
                             "the timer does not see)");
    f.evidence = evidence;
    return f;
  }
  return std::nullopt;
}

// The kernel's first dtype (its manifest's order) at the default budget; every dtype with --budget
// 2 or more. Timing is the one gate that needs the device to itself, so it is kept short; the other
// dtypes' correctness is already the twelve gates' business.
std::vector<DType> timed_dtypes(const GateContext& ctx) {
  std::vector<DType> dtypes = ctx.space.dtypes();
  if (ctx.budget < 2 && dtypes.size() > 1) dtypes.resize(1);
  return dtypes;
}

// One dtype's input sets, at the timed shape (timing_shape.h).
bool timing_sets(const GateContext& ctx, const Targets& t, DType dtype, std::vector<Case>* sets, std::string* error) {
  for (int r = 0; r < t.sets; ++r) {
    Case c;
    if (!timing_case(ctx.space, dtype, t, ctx.case_seed(kGate, uint64_t(dtype) * 64 + r), &c, error)) return false;
    c.index = uint64_t(dtype) * 64 + r;
    sets->push_back(c);
  }
  return true;
}

class TimingGate : public Gate {
 public:
  std::string name() const override { return kGate; }

  // Every set run() will time, made while the correctness gates run (timing_ahead.h); a set that
  // cannot be made here is left for run(), which reports its error.
  void prepare_ahead(const GateContext& ctx) override {
    const Targets t = targets_for(ctx.manifest.device);
    std::vector<Case> all;
    for (DType dtype : timed_dtypes(ctx))
      if (std::string error; !timing_sets(ctx, t, dtype, &all, &error)) return;
    ahead_.start(ctx, std::move(all));
  }

  GateVerdict run(GateContext& ctx) override {
    GateVerdict v;
    v.name = name();
    if (!ctx.earlier_failures.empty()) {
      std::string list;
      for (const std::string& g : ctx.earlier_failures) list += (list.empty() ? "" : ", ") + g;
      v.status = Status::Skip;
      v.message = "skip: timing runs only for kernels that pass the twelve gates (failed: " + list + ")";
      return v;
    }
    const Targets t = targets_for(ctx.manifest.device);
    std::vector<std::string> parts;
    nlohmann::json per_dtype = nlohmann::json::array();
    for (DType dtype : timed_dtypes(ctx)) {
      std::vector<Case> sets;
      if (std::string error; !timing_sets(ctx, t, dtype, &sets, &error)) {
        v.status = Status::HarnessError;
        v.category = Category::HarnessError;
        v.message = std::string("no timing shape for ") + dtype_name(dtype) + ": " + error;
        return v;
      }
      nlohmann::json evidence;
      std::string summary;
      GateVerdict r = time_sets(ctx, sets, &evidence, &summary);
      if (r.status != Status::Pass) return r;
      per_dtype.push_back(evidence);
      parts.push_back(summary);
      v.cases += int(sets.size());
    }
    v.evidence["dtypes"] = per_dtype;
    if (ctx.manifest.device == "cuda")
      v.evidence["resources"] = is_python_module(ctx.manifest)
                                    ? nlohmann::json{{"note", "a Python module: no binary of its own to read "
                                                              "(load_inline and Triton build theirs at run time)"}}
                                    : cubin_resources(ctx.so_path);
    v.message.clear();
    for (const std::string& p : parts) v.message += (v.message.empty() ? "" : "; ") + p;
    return v;
  }

  // Replay: the stored case is the only input set.
  GateVerdict check_one(GateContext& ctx, const Case& c) override {
    nlohmann::json evidence;
    std::string summary;
    GateVerdict v = time_sets(ctx, {c}, &evidence, &summary);
    if (v.status == Status::Pass) v.message = summary, v.evidence = evidence;
    return v;
  }

 private:
  PreparedAhead ahead_;

  GateVerdict time_sets(GateContext& ctx, const std::vector<Case>& sets, nlohmann::json* evidence,
                        std::string* summary) {
    const Targets t = targets_for(ctx.manifest.device);
    SetTiming st(ctx, sets, ctx.manifest.device == "cuda", ahead_);
    GateVerdict v;
    v.name = name();
    v.cases = int(sets.size());
    SteadyClock::time_point phase = SteadyClock::now();
    if (!prepare(st, t, &v)) return v;
    st.host.prepare = seconds_since(phase);
    phase = SteadyClock::now();
    std::unique_ptr<WorkerSession> session = open_session_with(ctx, name(), &v, st.load);
    if (!session) return v;
    st.host.child = seconds_since(phase);
    if (auto e = time_in_first_child(st, *session)) return *e;
    if (auto o = time_compiled_baselines(ctx, name(), session->signature(), st.load, &st.timed, &st.host))
      return candidate_error(st, *o);
    phase = SteadyClock::now();
    if (auto f = judge_replies(st)) return *f;
    const CandidateFigures fig = candidate_figures(st, evidence);
    // prepare: inputs and oracles; child: start and load; clock: the exchange that has the device
    // to itself (sending the sets, untimed and timed calls, peaks when not cached); judge: after.
    st.host.judge = seconds_since(phase);
    (*evidence)["host_seconds"] = {
        {"prepare", st.host.prepare}, {"child", st.host.child}, {"clock", st.host.clock}, {"judge", st.host.judge}};
    // Sets whose inputs and oracle were made while the correctness gates ran, of `input_sets`,
    // and that thread's seconds for every dtype (prepare_ahead; 0 and 0 where nothing was).
    (*evidence)["prepared_ahead"] = {{"sets", st.prepared_ahead}, {"seconds", ahead_.seconds()}};
    // Inside the first timed run's child (its share of "clock"; the rest is the pipe and peaks).
    if (const wire::TimeReply& rep = st.timed.reps[0]; !rep.phase_seconds.empty()) {
      nlohmann::json w;
      for (size_t i = 0; i < rep.phase_seconds.size() && i < std::size(wire::kTimePhaseNames); ++i)
        w[wire::kTimePhaseNames[i]] = rep.phase_seconds[i];
      (*evidence)["worker_seconds"] = w;
    }
    summarize(st, fig, evidence, summary);
    if (auto f = implausible(st, fig, *evidence)) return *f;
    v.status = Status::Pass;
    return v;
  }
};

}  // namespace

std::unique_ptr<Gate> make_timing_gate() { return std::make_unique<TimingGate>(); }

}  // namespace gauntlet
