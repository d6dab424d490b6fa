// Gate 13, timing: the candidate against the library op, interleaved, L2 flushed, outputs re-checked, physics-checked.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <optional>

#include "../include/gauntlet/build/build_cache.h"
#include "gauntlet/cases/gate.h"
#include "gauntlet/cases/judge.h"
#include "gauntlet/oracle/module_oracle.h"
#include "gauntlet/common/timing.h"

namespace gauntlet {
namespace {

// How big the timed shape grows, per device. CPU: a few MB so a gate stays around a second on a
// 2-core machine; GPU: well past the L2 (50 MB on an H200) so the bytes term is DRAM traffic and
// a kernel that skips its work falls far below the floor, yet an fp64 oracle of each input set
// stays under a second on the host.
struct Targets {
  double bytes, flops;
  int sets;
  uint32_t max_iterations;
  double budget_seconds;   // per dtype, timed loop only
  uint64_t flush_bytes;    // GPU: scratch written before every timed call (as triton's do_bench)
};
Targets targets_for(const std::string& device) {
  // Two GPU input sets, not more: the L2 flush already makes every call start cold, and each set
  // costs seconds of host time (generation, fp64 oracle, judging ~17M elements); measured on the
  // H200, four sets made the timing gate 40-70 s of a kernel's ~50-80 s.
  // 64 MB moved is 16 us of DRAM traffic at the H200's 4 TB/s: long enough for CUDA events (0.5 us
  // resolution) to resolve 3%, while generating and judging two such sets stays well under a
  // second of host time. 128 MB doubled that host time for no better agreement with do_bench.
  if (device == "cuda") return {64e6, 1e10, 2, 200, 1.0, uint64_t(256) << 20};
  return {4e6, 3e7, 3, 60, 0.3, 0};
}

struct Cost {
  double flops = 0, bytes = 0;
  bool ok = false;
};

Cost cost_of(const OpSchema& schema, const Case& c) {
  auto f = eval_case_expr(schema.flops.empty() ? "0" : schema.flops, c);
  auto b = eval_case_expr(schema.bytes.empty() ? "0" : schema.bytes, c);
  Cost cost;
  cost.ok = f && b;
  if (cost.ok) cost.flops = double(*f), cost.bytes = double(*b);
  return cost;
}

// Inside the schema's max_numel, and the inputs' own bytes under `max_bytes`: a cost model may
// leave a dim out (embedding's vocabulary: only the gathered rows move), and growing that dim
// would only make the host generate and ship a bigger table (measured: a 61 s timing gate).
bool within_size(const OpSchema& schema, const Case& c, double max_bytes) {
  double bytes = 0;
  for (const TensorRecipe& r : c.tensors) {
    int64_t n = 1;
    for (int64_t d : r.shape) n *= d;
    if (schema.max_numel > 0 && n > schema.max_numel) return false;
    bytes += double(n) * double(dtype_size(r.dtype));
  }
  return bytes <= max_bytes;
}

// The timed shape: each dim starts at its largest typical size and is doubled in turn while the
// case stays inside the contract and under the device's byte and flop targets.
bool timing_case(const CaseSpace& space, DType dtype, const Targets& t, uint64_t seed, Case* out, std::string* error) {
  const OpSchema& schema = space.schema();
  AttrMap attrs;
  for (const AttrSpec& a : schema.attributes) {
    auto fixed = space.manifest().attrs.find(a.name);
    attrs[a.name] = fixed != space.manifest().attrs.end() ? fixed->second : a.default_value;
  }
  const size_t alts = schema.inputs.empty() ? 1 : schema.inputs[0].shapes.size();
  const size_t alt = std::min<size_t>(1, alts - 1);  // a 2-D pattern where there is one
  std::map<std::string, int64_t> dims;
  for (const auto& [name, domain] : schema.dims) {
    std::vector<int64_t> sizes = space.sizes_for(name);
    dims[name] = sizes.empty() ? space.limits_for(name).first : *std::max_element(sizes.begin(), sizes.end());
  }
  auto fits = [&](const std::map<std::string, int64_t>& d, Case* c) {
    std::string why;
    if (!space.build(d, alt, attrs, dtype, Distribution::Normal, seed, c, &why)) return false;
    Cost cost = cost_of(schema, *c);
    return cost.ok && within_size(schema, *c, t.bytes) && cost.bytes <= t.bytes && cost.flops <= t.flops;
  };
  Case best;
  if (!fits(dims, &best)) {
    // The typical maxima are too big together: fall back to the first typical case.
    if (!space.fixed_case(dtype, Distribution::Normal, seed, &best, error)) return false;
    *out = best;
    return true;
  }
  for (bool grew = true; grew;) {
    grew = false;
    for (auto& [name, size] : dims) {
      const int64_t hi = space.limits_for(name).second;
      if (size * 2 > hi) continue;
      auto trial = dims;
      trial[name] = size * 2;
      Case c;
      if (fits(trial, &c)) {
        dims = trial;
        best = c;
        grew = true;
      }
    }
  }
  *out = best;
  return true;
}

std::string fmt(const char* f, double a) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, a);
  return buf;
}

// Device peaks, measured once per device and kept in the build cache directory.
bool load_peaks(const std::string& key, wire::DevicePeaks* p) {
  std::ifstream in(build_internal::default_cache_dir() + "/peaks/" + key + ".json");
  if (!in) return false;
  try {
    nlohmann::json j = nlohmann::json::parse(in);
    p->device = j.at("device");
    p->copy_bytes_per_s = j.at("copy_bytes_per_s");
    p->matmul_flops_f32 = j.at("matmul_flops_f32");
    p->matmul_flops_f16 = j.at("matmul_flops_f16");
    p->matmul_flops_bf16 = j.at("matmul_flops_bf16");
    p->how = j.value("how", "");
    return p->copy_bytes_per_s > 0;
  } catch (...) {
    return false;  // a damaged cache entry is measured again
  }
}

void store_peaks(const std::string& key, const wire::DevicePeaks& p) {
  const std::string dir = build_internal::default_cache_dir() + "/peaks";
  if (!build_internal::make_dirs(dir, nullptr)) return;
  nlohmann::json j = {{"device", p.device}, {"copy_bytes_per_s", p.copy_bytes_per_s},
                      {"matmul_flops_f32", p.matmul_flops_f32}, {"matmul_flops_f16", p.matmul_flops_f16},
                      {"matmul_flops_bf16", p.matmul_flops_bf16}, {"how", p.how}};
  const std::string path = dir + "/" + key + ".json", tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp);
    out << j.dump(2) << "\n";
  }
  std::rename(tmp.c_str(), path.c_str());
}

std::string cache_key(std::string s) {
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos)
      return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

double matmul_peak(const wire::DevicePeaks& p, DType d) {
  if (d == DType::Float16) return p.matmul_flops_f16;
  if (d == DType::BFloat16) return p.matmul_flops_bf16;
  return p.matmul_flops_f32;
}

nlohmann::json summary_json(const timing::Summary& s) {
  return {{"n", s.n}, {"median_ms", s.median}, {"p25_ms", s.p25}, {"p75_ms", s.p75}, {"min_ms", s.min},
          {"ci95_ms", {s.ci_low, s.ci_high}}, {"relative_iqr", s.spread()}};
}

// Registers, shared memory and local memory (spills) of each CUDA function, from cuobjdump.
nlohmann::json cubin_resources(const std::string& so_path) {
  std::string tool;
  for (const char* c : {"/usr/local/cuda/bin/cuobjdump", "/usr/bin/cuobjdump"})
    if (access(c, X_OK) == 0) tool = c;
  if (tool.empty()) return {{"note", "cuobjdump not found"}};
  const std::string cmd = tool + " --dump-resource-usage '" + so_path + "' 2>/dev/null";
  std::string text;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, n);
    pclose(p);
  }
  nlohmann::json out = nlohmann::json::array();
  for (const timing::KernelResources& k : timing::parse_resource_usage(text))
    out.push_back({{"function", k.function}, {"registers", k.registers}, {"shared_bytes", k.shared_bytes},
                   {"local_bytes", k.local_bytes}, {"spills", k.local_bytes > 0}});
  return out;
}

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

std::vector<Baseline> baselines_for(const GateContext& ctx) {
  if (!is_python_module(ctx.manifest)) return {{ctx.schema.name, "ATen " + ctx.schema.name}};
  std::vector<Baseline> b = {{"module:eager", "eager Model"}};
  if (!is_module_schema(ctx.schema)) b.push_back({ctx.schema.name, "ATen " + ctx.schema.name});
  b.push_back({"module:compiled", "torch.compile(Model)", true});
  return b;
}

// Holds the context's clock section for its lifetime (or until leave()).
class ClockSection {
 public:
  explicit ClockSection(GateContext& ctx) : ctx_(ctx) {
    if (ctx_.clock_section) shared_ = ctx_.clock_section(true), held_ = true;
  }
  // Whether a child past its GPU turn's bound was still running on the device when entered.
  bool shared() const { return shared_; }
  ~ClockSection() { leave(); }
  void leave() {
    if (held_) ctx_.clock_section(false), held_ = false;
  }

 private:
  GateContext& ctx_;
  bool held_ = false, shared_ = false;
};

class TimingGate : public Gate {
 public:
  std::string name() const override { return "timing"; }

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
    // The kernel's first dtype (its manifest's order) at the default budget; every dtype with
    // --budget 2 or more. Timing is the one gate that needs the device to itself, so it is kept
    // short; the other dtypes' correctness is already the twelve gates' business.
    std::vector<DType> dtypes = ctx.space.dtypes();
    if (ctx.budget < 2 && dtypes.size() > 1) dtypes.resize(1);
    for (DType dtype : dtypes) {
      std::vector<Case> sets;
      std::string error;
      for (int r = 0; r < t.sets; ++r) {
        Case c;
        if (!timing_case(ctx.space, dtype, t, ctx.case_seed(name(), uint64_t(dtype) * 64 + r), &c, &error)) {
          v.status = Status::HarnessError;
          v.category = Category::HarnessError;
          v.message = std::string("no timing shape for ") + dtype_name(dtype) + ": " + error;
          return v;
        }
        c.index = uint64_t(dtype) * 64 + r;
        sets.push_back(c);
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
  GateVerdict time_sets(GateContext& ctx, const std::vector<Case>& sets, nlohmann::json* evidence,
                        std::string* summary) {
    const Targets t = targets_for(ctx.manifest.device);
    const bool cuda = ctx.manifest.device == "cuda";
    GateVerdict v;
    v.name = name();
    v.cases = int(sets.size());
    // Where the gate's time goes (evidence "host_seconds"): only "clock" holds the device alone.
    using SteadyClock = std::chrono::steady_clock;
    auto since = [](SteadyClock::time_point t) { return std::chrono::duration<double>(SteadyClock::now() - t).count(); };
    SteadyClock::time_point phase = SteadyClock::now();
    double prepare_s = 0, child_s = 0, clock_s = 0, judge_s = 0;
    // Inputs and the fp64 oracle of every set (the untimed outputs are judged against it).
    std::vector<CaseRun> runs(sets.size());
    wire::TimeRequest req;
    for (size_t s = 0; s < sets.size(); ++s) {
      runs[s].c = sets[s];
      runs[s].inputs = materialize_all(sets[s]);
      runs[s].oracle = run_oracle(ctx.schema.oracle, runs[s].inputs, sets[s].attrs);
      if (!runs[s].oracle.ok()) {
        v.status = Status::HarnessError;
        v.category = Category::HarnessError;
        v.message = "the oracle rejected the timing case " + sets[s].label + ": " + runs[s].oracle.error;
        return v;
      }
      req.sets.push_back(make_args(ctx.schema, runs[s].inputs, sets[s].attrs));
    }
    // CPU: candidate and baseline both single-threaded. An intra-op pool on a machine that runs
    // other gates (or other jobs) at the same time measures the scheduler: a thread preempted at a
    // barrier costs a whole time slice (measured: ATen relu 0.1 ms alone, 16 ms with 2 threads
    // beside a build on 2 cores).
    const int cores = 1;
    const std::vector<Baseline> baselines = baselines_for(ctx);
    req.max_iterations = std::max<uint32_t>(t.max_iterations * uint32_t(ctx.budget), req.min_iterations);
    req.budget_seconds = t.budget_seconds * ctx.budget;
    req.flush_bytes = cuda ? t.flush_bytes : 0;
    req.threads = cores;
    wire::LoadRequest load;
    load.intra_op_threads = cores;
    prepare_s = since(phase);
    phase = SteadyClock::now();
    std::unique_ptr<WorkerSession> session = open_session_with(ctx, name(), &v, load);
    if (!session) return v;
    child_s = since(phase);
    // A candidate's error in any timed run is the candidate's verdict.
    auto candidate_error = [&](const Outcome& o) {
      runs[0].outcome = o;
      GateVerdict e = verdict_from_outcome(ctx, name(), runs[0]);
      e.cases = int(sets.size());
      e.replay = write_replay(ctx, name(), runs[0], e);
      return e;
    };
    // Only the timed loop and the peak measurement need the device alone (ClockSection); inputs,
    // oracles, the child's start and the judging below run beside other work.
    ClockSection clock(ctx);
    bool gpu_shared = clock.shared();
    phase = SteadyClock::now();
    // One timed run per baseline (a native kernel has one: the library op), each interleaving the
    // candidate with that baseline. All but a torch.compile baseline share the first child.
    std::vector<wire::TimeReply> reps(baselines.size());
    for (size_t b = 0; b < baselines.size(); ++b) {
      if (baselines[b].own_child) continue;
      req.baseline_op = baselines[b].op;
      Outcome o = time_once(*session, req, &reps[b]);
      if (o.kind != Outcome::Kind::Ok) return candidate_error(o);
    }
    std::vector<int> retimed(baselines.size(), 0);
    {
      Outcome o = retime_unsteady(*session, req, baselines, &reps, &retimed);
      if (o.kind != Outcome::Kind::Ok) return candidate_error(o);
    }
    const wire::TimeReply& rep = reps[0];
    // Device peaks: measured once per device, cached.
    const std::string device_name = cuda ? rep.device : cpu_model() + " x" + std::to_string(cores) + " thread";
    wire::DevicePeaks peaks;
    const std::string key = cache_key((cuda ? "cuda-" : "cpu-") + device_name);
    if (!load_peaks(key, &peaks)) {
      std::string pp, why;
      Outcome po = session->exchange(wire::FrameType::Peaks, "", wire::FrameType::PeaksReply, &pp);
      if (po.kind == Outcome::Kind::Ok && wire::decode(pp, &peaks, &why) && peaks.copy_bytes_per_s > 0) {
        if (!cuda) peaks.device = device_name;
        store_peaks(key, peaks);
      }
    }
    clock_s = since(phase);
    clock.leave();
    session->finish();
    // The module's child says when it cannot time torch.compile(Model) (no torch.compile, or a CPU
    // child that may not run a compiler): then no child is started for it.
    const std::string signature = session->signature(), no_compile = "\nno-compiled-baseline: ";
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
      phase = SteadyClock::now();
      GateVerdict not_started;
      std::unique_ptr<WorkerSession> own = open_session_with(ctx, name(), &not_started, load);
      child_s += since(phase);
      if (!own) {
        reps[b].baseline_error = "its child did not start: " + not_started.message;
        continue;
      }
      ClockSection own_clock(ctx);
      phase = SteadyClock::now();
      req.baseline_op = baselines[b].op;
      wire::TimeReply r;
      Outcome o = time_once(*own, req, &r);
      clock_s += since(phase);
      gpu_shared = gpu_shared || own_clock.shared();
      own_clock.leave();
      own->finish();
      if (o.kind == Outcome::Kind::Ok) reps[b] = std::move(r);
      else if (r.code > 0 && r.code < 100) return candidate_error(o);
      else reps[b].baseline_error = std::string("its child failed (") + category_name(o.category) + "): " + o.message;
    }
    phase = SteadyClock::now();
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

    // The candidate's times from every run in the first child (one run for a native kernel; a
    // child of its own is another process, whose times go only into its baseline's speedup).
    std::vector<double> candidate_ms;
    for (size_t b = 0; b < reps.size(); ++b)
      if (!baselines[b].own_child)
        candidate_ms.insert(candidate_ms.end(), reps[b].candidate_ms.begin(), reps[b].candidate_ms.end());
    const timing::Summary cand = timing::summarize(candidate_ms);
    const DType dtype = sets[0].tensors.at(0).dtype;
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
                 {"l2_flush_bytes", req.flush_bytes},
                 {"candidate", summary_json(cand)},
                 {"flops", cost.flops},
                 {"bytes", cost.bytes},
                 {"device", device_name},
                 {"peaks", {{"copy_bytes_per_s", peaks.copy_bytes_per_s},
                            {"matmul_flops", matmul_peak(peaks, dtype)},
                            {"how", peaks.how}}},
                 {"roofline", {{"seconds", roof.seconds}, {"bound", roof.bound}, {"utilization", utilization}}}};
    // prepare: inputs and oracles; child: start and load; clock: the exchange that has the device
    // to itself (sending the sets, untimed and timed calls, peaks when not cached); judge: after.
    judge_s = since(phase);
    (*evidence)["host_seconds"] = {{"prepare", prepare_s}, {"child", child_s}, {"clock", clock_s}, {"judge", judge_s}};
    // Inside the first timed run's child (its share of "clock"; the rest is the pipe and peaks).
    if (!rep.phase_seconds.empty()) {
      nlohmann::json w;
      for (size_t i = 0; i < rep.phase_seconds.size() && i < std::size(wire::kTimePhaseNames); ++i)
        w[wire::kTimePhaseNames[i]] = rep.phase_seconds[i];
      (*evidence)["worker_seconds"] = w;
    }
    // Each baseline's speedup is against the candidate's median in the same interleaved run. The
    // first baseline that ran is "baseline"/"speedup" (the library op for a native kernel, eager
    // Model for a module); a module's every baseline is in "baselines", with the reason for any
    // that did not run.
    *summary = std::string(dtype_name(dtype)) + " " + fmt("%.4g ms", cand.median) + fmt(" (IQR %.0f%%)", 100 * cand.spread());
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
    // Noise is reported, not failed: the figures of a run still unsteady after its retimes are
    // the machine's as much as the kernel's.
    int retimes = 0;
    for (int n : retimed) retimes += n;
    double fastest = 0, worst_spread = 0;
    std::vector<timing::Steadiness> steady(reps.size());
    for (size_t b = 0; b < reps.size(); ++b) {
      steady[b] = timing::steadiness(reps[b].candidate_ms, sets.size());
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
    // Time-slicing with a slow kernel only adds time: uncertain figures, never a false failure.
    (*evidence)["gpu_shared"] = gpu_shared;
    if (gpu_shared)
      *summary += ", GPU shared during the timed loop with another kernel's child running past its turn bound "
                  "(--gpu-turn-bound): figures uncertain";
    if (baselines.size() > 1) (*evidence)["baselines"] = all;
    if (is_module_schema(ctx.schema))  // cost "0": no floor, no utilization
      (*evidence)["roofline"] = {{"note", "an unmapped module has no cost model (flops, bytes): no physical floor; "
                                          "map it to an op schema for one"}};
    else if (peaks.copy_bytes_per_s > 0)
      *summary += fmt(", %.0f%% of roofline", 100 * utilization) + " (" + roof.bound + ")";
    // Faster than physics allows: the work was not done inside the timed window.
    if (peaks.copy_bytes_per_s > 0 && roof.seconds > 0 && seconds < timing::kImplausibleFraction * roof.seconds) {
      std::vector<at::Tensor> outs = rep.verified.empty() ? std::vector<at::Tensor>{} : rep.verified[0];
      GateVerdict f = fail(ctx, runs[0], outs,
                           "implausible: median " + fmt("%.4g ms", cand.median) + " is " +
                               fmt("%.1f%%", 100 * seconds / roof.seconds) + " of the roofline time " +
                               fmt("%.4g ms", roof.seconds * 1000) + " (" + fmt("%.3g", cost.bytes) + " bytes at " +
                               fmt("%.3g B/s", peaks.copy_bytes_per_s) + ", " + fmt("%.3g", cost.flops) + " flops at " +
                               fmt("%.3g flop/s", matmul_peak(peaks, dtype)) +
                               "): the work is not inside the timed window (cached results, or work on a stream "
                               "the timer does not see)");
      f.evidence = *evidence;
      return f;
    }
    v.status = Status::Pass;
    return v;
  }

  // One Time exchange; a reply the parent cannot decode is a crash (protocol violation), a
  // candidate's failure code its error or out-of-memory, a code of 100 or more the harness's.
  // Times again each first-child run that is unsteady (timing::unsteady), at most kRetimes more
  // times, keeping the steadiest attempt. A run whose timed calls differed from the verified
  // outputs is kept as it is: that is the candidate's failure, not noise.
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

  Outcome time_once(WorkerSession& session, const wire::TimeRequest& req, wire::TimeReply* rep) {
    std::string payload, why;
    Outcome o = session.exchange(wire::FrameType::Time, wire::encode(req), wire::FrameType::TimeReply, &payload);
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

  // "" when every output is within tolerance of the oracle, else the first failure's evidence.
  std::string judge_all(GateContext& ctx, const CaseRun& run, const std::vector<at::Tensor>& outs) {
    const DType dtype = run.c.tensors.at(0).dtype;
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
    v.name = name();
    v.status = Status::Fail;
    v.category = Category::WrongResult;
    v.message = "case " + run.c.label + ": " + message;
    run.outcome.kind = Outcome::Kind::Ok;
    run.outcome.reply.calls.assign(1, wire::CallOutputs{});
    run.outcome.reply.calls[0].outputs = outs;
    note_outputs(v, run);
    v.replay = write_replay(ctx, name(), run, v);
    return v;
  }
};

}  // namespace

std::unique_ptr<Gate> make_timing_gate() { return std::make_unique<TimingGate>(); }

}  // namespace gauntlet
