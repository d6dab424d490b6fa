// gauntlet audit: a corpus's kernels verified in parallel lanes, each gate stored as it finishes.
#include "gauntlet/audit/audit.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <thread>
#include <tuple>

#include "audit_builds.h"
#include "audit_lane.h"
#include "audit_progress.h"
#include "lane_pool.h"
#include "gauntlet/audit/results_db.h"
#include "gauntlet/build/module_build.h"
#include "gauntlet/common/atomic_file.h"
#include "gauntlet/common/interrupt.h"
#include "gauntlet/run/verify.h"
#include "gauntlet/sandbox/device_nodes.h"
#include "gauntlet/version.h"

namespace gauntlet {
namespace {

using KeyTuple = std::tuple<std::string, std::string, std::string, uint64_t>;
KeyTuple tuple_of(const KernelKey& k) { return {k.kernel_hash, k.manifest_hash, k.tool_version, k.seed}; }

bool complete(const KernelRecord& r) { return r.report.is_object() || !r.entry_error.empty(); }

int fail(const std::string& msg) {
  std::fprintf(stderr, "gauntlet: error: %s\n", msg.c_str());
  return 2;
}

int interrupted(int sig, const AuditOptions& o) {
  std::fprintf(stderr, "%sgauntlet: interrupted by %s: every finished gate is kept in %s; run the same command again (same --db) to resume\n",
               isatty(2) == 1 ? "\n" : "", signal_name(sig), o.db_path.c_str());
  return interrupted_exit_status(sig);
}

// What this run of the audit verifies: the shard's kernels not yet complete in the database, in
// corpus order, with the gates already stored for each.
struct AuditPlan {
  std::set<KeyTuple> mine;          // the kernels of this shard, for the summary and --json
  std::vector<AuditWork> cpu, gpu;  // the kernels to verify, in corpus order
  int gates_to_run = 0;
  AuditSummaryInfo info;
};

// Discovers the corpus and reads what the database holds of it. Returns the exit status when the
// audit ends here (an error, an interrupt), nullopt when the plan is made.
std::optional<int> plan_audit(const AuditOptions& o, const std::vector<std::string>& names, const std::vector<int>& gpus,
                              const InterruptWatch& watch, AuditPlan* plan) {
  std::string error;
  auto entries = discover_corpus(o.path, o.work_dir, &error);
  if (!entries) return fail(error);
  // Nothing to audit is the user's slip (a wrong folder, an empty JSONL), not a clean run. A shard
  // left empty by --shard still exits 0: the whole corpus had entries.
  if (entries->empty())
    return fail(o.path + " holds no kernel: no manifest, KernelBench module or JSONL line to audit");
  auto db = ResultsDb::open(o.db_path, &error);
  if (!db || !db->check_intact(&error)) return fail(error);
  AuditSummaryInfo& info = plan->info;
  std::map<std::string, std::string> unrunnable_by_op;  // dtypes_unavailable_for, by op and dtypes
  for (CorpusEntry& e : *entries) {
    if (const int sig = watch.take(); sig != 0) return interrupted(sig, o);
    if (shard_of(e.kernel_hash, o.shard.count) != o.shard.index) continue;
    KernelKey key{e.kernel_hash, e.manifest_hash, GAUNTLET_VERSION_STRING, o.verify.seed};
    if (!plan->mine.insert(tuple_of(key)).second) {
      ++info.duplicates;
      continue;
    }
    auto stored = db->kernel(key, &error);
    if (!error.empty()) return fail(error);
    std::map<std::string, GateVerdict> known = db->gates(key, &error);
    if (!error.empty()) return fail(error);
    // A harness error stored by an earlier run is gauntlet's failure, never a verdict on the kernel:
    // a resumed audit runs that gate again (the harness may have been fixed since, or the fault passed).
    const size_t before_retry = known.size();
    for (auto it = known.begin(); it != known.end();) it = it->second.status == Status::HarnessError ? known.erase(it) : std::next(it);
    const bool retry = known.size() != before_retry;
    info.harness_errors_retried += int(before_retry - known.size());
    // The standard check runs for a kernel that has none stored; for a complete one, alone.
    const bool needs_check = o.standard_check && e.error.empty() && !(stored && stored->standard_check.is_object());
    if (stored && complete(*stored) && !retry) {
      ++info.already_complete;
      if (!needs_check || !stored->entry_error.empty() || (e.manifest->device == "cuda" && gpus.empty())) continue;
      AuditWork w{std::move(e), key, std::move(known), true, true};
      ++info.checks_only;
      (w.entry.manifest->device == "cuda" ? plan->gpu : plan->cpu).push_back(std::move(w));
      continue;
    }
    if (!e.error.empty()) {  // recorded as what it is; the audit goes on
      KernelRecord rec;
      rec.entry = e.entry;
      rec.verdict = "error";
      rec.entry_error = e.error;
      rec.info = e.info;
      if (!db->put_kernel(key, rec, &error)) return fail(error);
      continue;
    }
    if (e.manifest->device == "cuda" && gpus.empty()) {
      plan->mine.erase(tuple_of(key));
      ++info.cuda_skipped;
      continue;
    }
    // An op this LibTorch cannot make the inputs of (fp8_matmul on torch before 2.1): left for a
    // gauntlet that can, as a CUDA kernel is left for a GPU machine. Decided once per op and dtypes.
    std::string dtype_key = e.manifest->op;
    for (DType d : e.manifest->dtypes) dtype_key += std::string(",") + dtype_name(d);
    auto known_why = unrunnable_by_op.find(dtype_key);
    if (known_why == unrunnable_by_op.end()) known_why = unrunnable_by_op.emplace(dtype_key, dtypes_unavailable_for(*e.manifest)).first;
    if (!known_why->second.empty()) {
      plan->mine.erase(tuple_of(key));
      if (info.dtype_skipped++ == 0) info.dtype_skip_reason = known_why->second;
      continue;
    }
    AuditWork w{std::move(e), key, std::move(known), needs_check};
    for (const std::string& n : names) plan->gates_to_run += !w.known.count(n);
    (w.entry.manifest->device == "cuda" ? plan->gpu : plan->cpu).push_back(std::move(w));
  }
  return std::nullopt;  // the database closes: each lane opens its own connection, one must not cross fork()
}

// Python modules' build steps run ahead of the lanes, --build-jobs at a time (audit_builds.h):
// started before the progress pipe and lock files exist, so it holds none of them open.
pid_t build_modules_ahead(const AuditOptions& o, const AuditPlan& plan, size_t gate_count) {
  std::vector<KernelManifest> to_build;
  for (const std::vector<AuditWork>* list : {&plan.gpu, &plan.cpu})
    for (const AuditWork& w : *list)
      if (is_python_module(*w.entry.manifest) && (w.known.size() < gate_count || w.run_check))
        to_build.push_back(*w.entry.manifest);
  const int build_jobs = o.build_jobs > 0 ? o.build_jobs : std::max(1, int(std::thread::hardware_concurrency()));
  // The precompiled torch/extension.h headers are made when missing: the plain one by the first
  // build that needs it, one with a module's own C++ flags (-O3) after that module's build, for the
  // modules after it; by whoever builds it, under its build lock, so a lane verifying it waits
  // and nothing is cut short when the lanes finish (module_build.h).
  build_pch_headers_on_demand(true);
  return start_build_ahead(to_build, o.sandbox, build_jobs);
}

// The shard's reports from the database (and --json), the summary, and the exit status.
struct AuditClock {
  std::chrono::steady_clock::time_point start;
  Overhead setup, lanes, finish;  // the audit's bookkeeping, by where it is spent
};

int report_audit(const AuditOptions& o, AuditPlan& plan, AuditClock& clock, int lane_failures, std::FILE* out) {
  std::string error;
  auto db = ResultsDb::open(o.db_path, &error);
  if (!db) return fail(error);
  std::optional<Overhead::Scope> finishing(std::in_place, clock.finish);
  nlohmann::json records = nlohmann::json::array();
  for (const nlohmann::json& r : db->reports(&error)) {
    KernelKey k{r.value("kernel_hash", ""), r.value("manifest_hash", ""), r.value("tool_version", ""), r.value("seed", uint64_t(0))};
    if (plan.mine.count(tuple_of(k))) records.push_back(r);
  }
  if (!error.empty()) return fail(error);
  if (!o.json_path.empty()) {
    // Written beside and renamed: an interrupted write never leaves half a file under the name.
    if (!write_file_atomic(o.json_path, records.dump(2) + "\n")) return fail("cannot write " + o.json_path);
  }
  finishing.reset();
  AuditSummaryInfo& info = plan.info;
  info.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - clock.start).count();
  info.kernels_verified = int(plan.cpu.size() + plan.gpu.size()) - info.checks_only;
  info.overhead_seconds = {double(clock.setup.ns.load()) * 1e-9, double(clock.lanes.ns.load()) * 1e-9,
                           double(clock.finish.ns.load()) * 1e-9};
  print_audit_summary(records, plan.info, out);
  if (lane_failures) return fail("an audit lane stopped on a harness error (see above); its kernel is incomplete, rerun to retry");
  for (const nlohmann::json& r : records)
    if (r.value("verdict", "") != "pass") return 1;
  return 0;
}

}  // namespace

std::vector<int> gpu_lane_plan(const std::vector<int>& gpus, int per_gpu, size_t kernels) {
  std::vector<int> plan;
  for (int l = 0; l < std::max(1, per_gpu); ++l)
    for (int g : gpus)
      if (plan.size() < kernels) plan.push_back(g);
  return plan;
}

int run_audit(const AuditOptions& o, std::FILE* out) {
  AuditClock clock;
  clock.start = std::chrono::steady_clock::now();
  InterruptWatch watch;
  AuditPlan plan;
  std::vector<int> gpus = o.gpus;
  const std::vector<std::string> names = o.verify.gates.empty() ? gate_names() : o.verify.gates;
  {
    Overhead::Scope setup(clock.setup);
    std::string no_cuda;
    if (gpus.empty() && cuda_device_present(&no_cuda)) gpus = {0};
    plan.info.db_path = o.db_path;
    plan.info.seed = o.verify.seed;
    plan.info.shard = std::to_string(o.shard.index) + "/" + std::to_string(o.shard.count);
    plan.info.cuda_skip_reason = no_cuda;
    if (std::optional<int> ended = plan_audit(o, names, gpus, watch, &plan)) return *ended;
  }
  const pid_t builder = build_modules_ahead(o, plan, names.size());
  // The build-ahead lane kills its build children (and their compilers) on SIGTERM, as lanes do.
  auto stop_builder = [&] {
    if (builder > 0) kill(builder, SIGTERM);
  };
  LanePool lanes;
  std::string error;
  if (!lanes.set_up(o, names, gpus, plan.cpu, plan.gpu, &error)) return fail(error);
  int sig = watch.take();
  if (sig != 0) return stop_builder(), interrupted(sig, o);
  lanes.start(watch);
  LanesEnded ended;
  {
    AuditProgress progress(int(plan.cpu.size() + plan.gpu.size()), plan.gates_to_run, isatty(2) == 1, o.progress_seconds, stderr);
    ended = lanes.follow(progress, watch, &sig, stop_builder, o.db_path);
  }
  clock.lanes.ns += ended.lane_overhead_ns;
  plan.info.gates_taken += ended.gates_taken;
  // Every module a lane verified is built by now; what the build-ahead lane still does is not needed.
  if (builder > 0) {
    kill(builder, sig ? SIGTERM : SIGKILL);
    while (waitpid(builder, nullptr, 0) < 0 && errno == EINTR) {}
  }
  // A failed write ends the audit with its one line: the summary would read the failing file.
  if (!ended.db_error.empty()) {
    const bool damaged = ended.db_error.find("the database is damaged") != std::string::npos;
    return fail(ended.db_error + (damaged ? "; the audit stopped" : "; the audit stopped, rerun to continue (what was stored is kept)"));
  }
  if (!sig) sig = watch.take();  // arrived as the last lanes finished: still one line, resumable
  if (sig) return interrupted(sig, o);
  lanes.release();
  return report_audit(o, plan, clock, ended.lane_failures, out);
}

}  // namespace gauntlet
