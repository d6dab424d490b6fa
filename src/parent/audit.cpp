// gauntlet audit: a corpus's kernels verified in parallel lanes, each gate stored as it finishes.
#include "gauntlet/audit.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <set>
#include <thread>
#include <tuple>

#include "audit_progress.h"
#include "gauntlet/results_db.h"
#include "gauntlet/version.h"

namespace gauntlet {
namespace {

using KeyTuple = std::tuple<std::string, std::string, std::string, uint64_t>;
KeyTuple tuple_of(const KernelKey& k) { return {k.kernel_hash, k.manifest_hash, k.tool_version, k.seed}; }

// The same rule as selftest's: asked without initializing CUDA (the parent never does).
bool cuda_device_present(std::string* why) {
  const char* off = getenv("GAUNTLET_NO_CUDA");
  if (off && std::string(off) == "1") return (*why = "GAUNTLET_NO_CUDA=1", false);
  if (access("/dev/nvidiactl", F_OK) != 0) return (*why = "no CUDA device (/dev/nvidiactl absent)", false);
  return true;
}

// Time the audit spends on its own bookkeeping (discovery, database, summary), beside the gates.
struct Overhead {
  std::atomic<int64_t> ns{0};
  struct Scope {
    Overhead& o;
    const std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
    explicit Scope(Overhead& overhead) : o(overhead) {}
    ~Scope() { o.ns += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count(); }
  };
};

bool complete(const KernelRecord& r) { return r.report.is_object() || !r.entry_error.empty(); }

struct Work {
  CorpusEntry entry;
  KernelKey key;
  std::map<std::string, GateVerdict> known;
};

// The kernels one kind of lane takes, in corpus order, one at a time per lane.
struct Queue {
  std::vector<Work> items;
  std::atomic<size_t> next{0};
};

}  // namespace

int run_audit(const AuditOptions& o, std::FILE* out) {
  const auto t0 = std::chrono::steady_clock::now();
  auto fail = [](const std::string& msg) {
    std::fprintf(stderr, "gauntlet: error: %s\n", msg.c_str());
    return 2;
  };
  std::string error;
  Overhead overhead;
  std::optional<Overhead::Scope> setup(std::in_place, overhead);
  auto entries = discover_corpus(o.path, o.work_dir, &error);
  if (!entries) return fail(error);
  auto db = ResultsDb::open(o.db_path, &error);
  if (!db) return fail(error);

  const int jobs = std::max(1, o.jobs);
  std::vector<int> gpus = o.gpus;
  std::string no_cuda;
  if (gpus.empty() && cuda_device_present(&no_cuda)) gpus = {0};
  const std::vector<std::string> names = o.verify.gates.empty() ? gate_names() : o.verify.gates;

  AuditSummaryInfo info;
  info.db_path = o.db_path;
  info.seed = o.verify.seed;
  info.shard = std::to_string(o.shard.index) + "/" + std::to_string(o.shard.count);
  info.cuda_skip_reason = no_cuda;
  std::set<KeyTuple> mine;  // the kernels of this shard, for the summary and --json
  Queue cpu, gpu;
  int gates_to_run = 0;
  for (CorpusEntry& e : *entries) {
    if (shard_of(e.kernel_hash, o.shard.count) != o.shard.index) continue;
    KernelKey key{e.kernel_hash, e.manifest_hash, GAUNTLET_VERSION_STRING, o.verify.seed};
    if (!mine.insert(tuple_of(key)).second) {
      ++info.duplicates;
      continue;
    }
    auto stored = db->kernel(key, &error);
    if (!error.empty()) return fail(error);
    if (stored && complete(*stored)) {
      ++info.already_complete;
      continue;
    }
    if (!e.error.empty()) {  // recorded as what it is; the audit goes on
      KernelRecord rec;
      rec.entry = e.entry;
      rec.verdict = "error";
      rec.entry_error = e.error;
      if (!db->put_kernel(key, rec, &error)) return fail(error);
      continue;
    }
    if (e.manifest->device == "cuda" && gpus.empty()) {
      mine.erase(tuple_of(key));
      ++info.cuda_skipped;
      continue;
    }
    Work w{std::move(e), key, db->gates(key, &error)};
    if (!error.empty()) return fail(error);
    for (const std::string& n : names) gates_to_run += !w.known.count(n);
    (w.entry.manifest->device == "cuda" ? gpu : cpu).items.push_back(std::move(w));
  }

  setup.reset();
  AuditProgress progress(int(cpu.items.size() + gpu.items.size()), gates_to_run, isatty(2) == 1, o.progress_seconds, stderr);
  std::mutex failure_mu;
  std::string db_failure;  // the first write that failed: the audit stops taking kernels
  std::atomic<bool> stop{false};
  auto db_failed = [&](const std::string& e) {
    std::lock_guard<std::mutex> lock(failure_mu);
    if (db_failure.empty()) db_failure = e;
    stop = true;
  };
  GateSlots cpu_slots(jobs);

  // A lane: one launcher (its own zygote, its own Python-module mode) verifying one kernel at a time.
  auto lane = [&](Queue& q, SandboxOptions sopts, GateSlots* slots) {
    Launcher launcher(sopts);
    for (size_t i; !stop && (i = q.next++) < q.items.size();) {
      Work& w = q.items[i];
      const KernelManifest& m = *w.entry.manifest;
      KernelRecord rec{w.entry.entry, m.op, m.device, "", nullptr, ""};
      std::string err;
      {
        Overhead::Scope timed{overhead};
        if (!db->put_kernel(w.key, rec, &err)) return db_failed(err);  // in progress: entry, op, device
      }
      VerifyOptions vo = o.verify;
      vo.progress = false;
      vo.known = w.known;
      vo.slots = slots;
      vo.jobs = slots ? slots->total() : 1;
      vo.on_gate = [&](const GateVerdict& v) {
        Overhead::Scope timed{overhead};
        std::string e;
        if (!db->put_gate(w.key, v, &e)) db_failed(e);
        progress.gate_done(v);
      };
      auto report = verify_kernel(m, vo, launcher, &err);
      if (!report) {  // a manifest verify refuses (unknown op, dtype outside the schema): a bad entry
        rec.verdict = "error";
        rec.entry_error = err;
      }
      Overhead::Scope timed{overhead};
      if (report) {
        rec.verdict = report->verdict;
        rec.report = report_to_json(*report);
      }
      if (!db->put_kernel(w.key, rec, &err)) return db_failed(err);
      progress.kernel_done(rec.verdict);
    }
  };
  std::vector<std::thread> lanes;
  const size_t cpu_lanes = std::min<size_t>(size_t(jobs), cpu.items.size());
  for (size_t l = 0; l < cpu_lanes; ++l)
    lanes.emplace_back(lane, std::ref(cpu), o.sandbox, jobs > 1 ? &cpu_slots : nullptr);
  // One lane per GPU, one gate process at a time on it.
  for (size_t l = 0; l < gpus.size() && l < gpu.items.size(); ++l) {
    SandboxOptions s = o.sandbox;
    s.gpu_index = gpus[l];
    lanes.emplace_back(lane, std::ref(gpu), s, nullptr);
  }
  for (std::thread& t : lanes) t.join();
  progress.stop();

  setup.emplace(overhead);
  nlohmann::json records = nlohmann::json::array();
  for (const nlohmann::json& r : db->reports(&error)) {
    KernelKey k{r.value("kernel_hash", ""), r.value("manifest_hash", ""), r.value("tool_version", ""), r.value("seed", uint64_t(0))};
    if (mine.count(tuple_of(k))) records.push_back(r);
  }
  if (!error.empty()) return fail(error);
  if (!o.json_path.empty()) {
    // Written beside and renamed: an interrupted write never leaves half a file under the name.
    const std::string tmp = o.json_path + ".tmp";
    std::ofstream js(tmp);
    js << records.dump(2) << "\n";
    js.close();
    if (!js || std::rename(tmp.c_str(), o.json_path.c_str()) != 0) return fail("cannot write " + o.json_path);
  }
  setup.reset();
  info.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  info.kernels_verified = int(cpu.items.size() + gpu.items.size());
  info.overhead_seconds = double(overhead.ns.load()) * 1e-9;
  print_audit_summary(records, info, out);
  if (!db_failure.empty()) return fail("results database: " + db_failure + " (the audit stopped; rerun to continue)");
  for (const nlohmann::json& r : records)
    if (r.value("verdict", "") != "pass") return 1;
  return 0;
}

}  // namespace gauntlet
