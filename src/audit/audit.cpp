// gauntlet audit: a corpus's kernels verified in parallel lanes, each gate stored as it finishes.
#include "gauntlet/common/atomic_file.h"
#include "gauntlet/sandbox/device_nodes.h"
#include "gauntlet/audit/audit.h"

#include <fcntl.h>
#include <map>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include <algorithm>
#include <atomic>
#include <memory>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <set>
#include <tuple>

#include "audit_builds.h"
#include "gauntlet/build/module_build.h"
#include "audit_lane.h"
#include "audit_progress.h"
#include "gauntlet/common/interrupt.h"
#include "gauntlet/audit/results_db.h"
#include "gauntlet/version.h"

namespace gauntlet {
namespace {

using KeyTuple = std::tuple<std::string, std::string, std::string, uint64_t>;
KeyTuple tuple_of(const KernelKey& k) { return {k.kernel_hash, k.manifest_hash, k.tool_version, k.seed}; }

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

// SIGINT, SIGTERM and SIGHUP, blocked in the audit's parent and read from a signalfd: the parent is
// woken in its progress loop, tells the lanes (which kill their children and exit) and then
// says, in one line, how to resume. Blocked from the start, so that no thread takes them.
struct InterruptWatch {
  int fd = -1;
  sigset_t both;
  InterruptWatch() {
    sigemptyset(&both);
    sigaddset(&both, SIGINT);
    sigaddset(&both, SIGTERM);
    sigaddset(&both, SIGHUP);  // the terminal closed: stopped as by SIGTERM, resumably
    pthread_sigmask(SIG_BLOCK, &both, nullptr);
    fd = signalfd(-1, &both, SFD_CLOEXEC | SFD_NONBLOCK);
  }
  ~InterruptWatch() {
    if (fd >= 0) ::close(fd);
  }
  // The signal received, 0 when none is pending.
  int take() const {
    signalfd_siginfo si{};
    if (fd >= 0 && read(fd, &si, sizeof si) == ssize_t(sizeof si)) return int(si.ssi_signo);
    return 0;
  }
};

int interrupted(int sig, const AuditOptions& o) {
  std::fprintf(stderr, "%sgauntlet: interrupted by %s: every finished gate is kept in %s; run the same command again (same --db) to resume\n",
               isatty(2) == 1 ? "\n" : "", signal_name(sig), o.db_path.c_str());
  return interrupted_exit_status(sig);
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
  const auto t0 = std::chrono::steady_clock::now();
  InterruptWatch watch;
  int sig = 0;
  auto fail = [](const std::string& msg) {
    std::fprintf(stderr, "gauntlet: error: %s\n", msg.c_str());
    return 2;
  };
  std::string error;
  Overhead setup_time, lane_time, finish_time;  // the audit's bookkeeping, by where it is spent
  std::optional<Overhead::Scope> setup(std::in_place, setup_time);
  auto entries = discover_corpus(o.path, o.work_dir, &error);
  if (!entries) return fail(error);
  // Nothing to audit is the user's slip (a wrong folder, an empty JSONL), not a clean run. A shard
  // left empty by --shard still exits 0: the whole corpus had entries.
  if (entries->empty())
    return fail(o.path + " holds no kernel: no manifest, KernelBench module or JSONL line to audit");
  auto db = ResultsDb::open(o.db_path, &error);
  if (!db || !db->check_intact(&error)) return fail(error);

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
  std::vector<AuditWork> cpu, gpu;  // the kernels to verify, in corpus order
  int gates_to_run = 0;
  for (CorpusEntry& e : *entries) {
    if ((sig = watch.take()) != 0) return interrupted(sig, o);
    if (shard_of(e.kernel_hash, o.shard.count) != o.shard.index) continue;
    KernelKey key{e.kernel_hash, e.manifest_hash, GAUNTLET_VERSION_STRING, o.verify.seed};
    if (!mine.insert(tuple_of(key)).second) {
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
      (w.entry.manifest->device == "cuda" ? gpu : cpu).push_back(std::move(w));
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
      mine.erase(tuple_of(key));
      ++info.cuda_skipped;
      continue;
    }
    AuditWork w{std::move(e), key, std::move(known), needs_check};
    for (const std::string& n : names) gates_to_run += !w.known.count(n);
    (w.entry.manifest->device == "cuda" ? gpu : cpu).push_back(std::move(w));
  }

  setup.reset();
  db.reset();  // each lane opens its own connection; one must not cross fork()

  // Python modules' build steps run ahead of the lanes, --build-jobs at a time (audit_builds.h):
  // forked before the progress pipe and lock files exist, so it holds none of them open.
  std::vector<KernelManifest> to_build;
  for (const std::vector<AuditWork>* list : {&gpu, &cpu})
    for (const AuditWork& w : *list)
      if (is_python_module(*w.entry.manifest) && (w.known.size() < names.size() || w.run_check))
        to_build.push_back(*w.entry.manifest);
  const int build_jobs = o.build_jobs > 0 ? o.build_jobs : std::max(1, int(std::thread::hardware_concurrency()));
  // The precompiled torch/extension.h headers are made when missing: the plain one by the first
  // build that needs it, one with a module's own C++ flags (-O3) after that module's build, for the
  // modules after it; by whoever builds it, under its build lock, so a lane verifying it waits
  // and nothing is cut short when the lanes finish (module_build.h).
  build_pch_headers_on_demand(true);
  const pid_t builder = start_build_ahead(to_build, o.sandbox, build_jobs);

  // Lane processes (audit_lane.cpp says why not threads), taking kernels from shared counters.
  // After them, the gate slots that CPU lanes with nothing left to take lend the others.
  const size_t shared_bytes = 2 * sizeof(std::atomic<size_t>) + sizeof(std::atomic<int>);
  void* shared = mmap(nullptr, shared_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) return fail(std::string("cannot map shared memory: ") + strerror(errno));
  auto* next = static_cast<std::atomic<size_t>*>(shared);
  new (&next[0]) std::atomic<size_t>(0);
  new (&next[1]) std::atomic<size_t>(0);
  auto* lent = new (static_cast<char*>(shared) + 2 * sizeof(std::atomic<size_t>)) std::atomic<int>(0);
  // The CPU lanes' host lock (audit_lane.h): two files, which every lane opens itself (a flock
  // belongs to an open file, not to a process). Unlinked at once, so that a killed audit leaves
  // nothing behind; the lanes reopen them through the descriptors they inherit (/proc/self/fd).
  std::vector<int> lock_fds;
  auto lock_pair = [&](std::string* lock, std::string* turnstile) {
    for (std::string* p : {lock, turnstile}) {
      std::string name = "/tmp/gauntlet-audit-lock-XXXXXX";
      const int fd = mkostemp(name.data(), O_CLOEXEC);
      if (fd < 0) return false;
      unlink(name.c_str());
      lock_fds.push_back(fd);
      *p = "/proc/self/fd/" + std::to_string(fd);
    }
    return true;
  };
  int progress_pipe[2];
  if (pipe2(progress_pipe, O_CLOEXEC) != 0) return fail(std::string("cannot create a pipe: ") + strerror(errno));
  std::vector<LaneConfig> lanes;
  LaneConfig base;
  base.options = &o;
  base.gates = names;
  base.progress_fd = progress_pipe[1];
  base.sandbox = o.sandbox;
  // CPU lanes: --jobs of them; correctness gates side by side, a measuring timing gate alone.
  base.work = &cpu;
  base.next = &next[0];
  base.lent_slots = lent;
  base.host_lock = jobs > 1;
  if (base.host_lock && !lock_pair(&base.lock_path, &base.turnstile_path))
    return fail("cannot create a lock file in /tmp: " + std::string(strerror(errno)));
  const size_t cpu_lane_count = std::min<size_t>(size_t(jobs), cpu.size());
  LaneShare* shares = nullptr;
  if (cpu_lane_count > 1) {
    void* m = mmap(nullptr, cpu_lane_count * sizeof(LaneShare), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return fail(std::string("cannot map shared memory: ") + strerror(errno));
    shares = static_cast<LaneShare*>(m);
    for (size_t l = 0; l < cpu_lane_count; ++l) new (&shares[l]) LaneShare();
  }
  for (size_t l = 0; l < cpu_lane_count; ++l) {
    LaneConfig c = base;
    c.shares = shares;
    c.share_count = shares ? cpu_lane_count : 0;
    c.self = l;
    lanes.push_back(c);
  }
  // GPU lanes: --gpu-jobs per GPU, beside the CPU lanes, each verifying one kernel at a time with
  // one gate process at a time; their children start side by side and take turns executing on
  // the GPU (gpu_turn.h: GpuTurn, which also keeps a timed loop alone there).
  for (int g : gpu_lane_plan(gpus, o.gpu_lanes, gpu.size())) {
    LaneConfig c = base;
    c.work = &gpu;
    c.next = &next[1];
    c.sandbox.gpu_index = g;
    c.host_lock = false;
    lanes.push_back(c);
  }
  // The module oracle's reference children (one per kernel in flight) share the CPUs out.
  const int reference_threads = reference_threads_for(o.sandbox, int(std::max<size_t>(1, lanes.size())));
  for (LaneConfig& c : lanes) c.sandbox.reference_threads = reference_threads;
  // The build-ahead lane kills its build children (and their compilers) on SIGTERM, as lanes do.
  auto stop_builder = [&] {
    if (builder > 0) kill(builder, SIGTERM);
  };
  if ((sig = watch.take()) != 0) return stop_builder(), interrupted(sig, o);
  std::fflush(nullptr);
  std::vector<pid_t> pids;
  for (const LaneConfig& c : lanes) {
    const pid_t pid = fork();
    if (pid == 0) {
      close(progress_pipe[0]);
      close(watch.fd);
      install_interrupt_exit("");  // a lane kills its children and exits, silently: the parent says it
      _exit(run_lane(c));  // _exit: the parent's buffers and destructors are not the lane's to run
    }
    if (pid < 0) std::fprintf(stderr, "gauntlet: cannot start an audit lane: %s\n", strerror(errno));
    else pids.push_back(pid);
  }
  close(progress_pipe[1]);

  // The lanes report each gate and kernel on the pipe; the parent only draws the progress.
  int lane_failures = 0;
  std::string db_error;  // the first failed write a lane reported: the audit stops there
  {
    AuditProgress progress(int(cpu.size() + gpu.size()), gates_to_run, isatty(2) == 1, o.progress_seconds, stderr);
    std::string buf;
    char chunk[4096];
    for (ssize_t n;;) {
      pollfd pfds[2] = {{progress_pipe[0], POLLIN, 0}, {watch.fd, POLLIN, 0}};
      if (poll(pfds, watch.fd >= 0 ? 2 : 1, -1) < 0 && errno != EINTR) break;
      if (pfds[1].revents & POLLIN) {
        const int got = watch.take();  // read even when a second: left unread, poll would spin
        if (got && !sig) {
          sig = got;
          for (pid_t pid : pids) kill(pid, SIGTERM);  // each lane kills its children, then exits
          stop_builder();
        }
      }
      if (!(pfds[0].revents & (POLLIN | POLLHUP))) continue;
      if ((n = read(progress_pipe[0], chunk, sizeof chunk)) == 0) break;
      if (n < 0) {
        if (errno == EINTR || errno == EAGAIN) continue;
        break;
      }
      buf.append(chunk, size_t(n));
      for (size_t nl; (nl = buf.find('\n')) != std::string::npos; buf.erase(0, nl + 1)) {
        const std::string line = buf.substr(0, nl), arg = line.size() > 2 ? line.substr(2) : "";
        if (line[0] == 'g') {
          GateVerdict v;
          v.status = arg == "pass" ? Status::Pass : arg == "skip" ? Status::Skip : Status::Fail;
          progress.gate_done(v);
        } else if (line[0] == 'd') {
          // Every later write would fail the same way: the other lanes stop now, not after hours of
          // gates that could not be stored.
          if (db_error.empty()) {
            db_error = arg;
            for (pid_t pid : pids) kill(pid, SIGTERM);
            stop_builder();
          }
        } else if (line[0] == 'k') {
          progress.kernel_done(arg);
        } else if (line[0] == 's') {
          ++info.gates_taken;
        } else if (line[0] == 'o') {
          lane_time.ns += std::strtoll(arg.c_str(), nullptr, 10);
        }
      }
    }
    close(progress_pipe[0]);
    for (pid_t pid : pids) {
      int status = 0;
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
      // Exit 3: a lane whose write failed (its 'd' line, read above, carries the reason).
      if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
        if (db_error.empty()) db_error = "an audit lane could not write the results database " + o.db_path;
      } else if (db_error.empty() && (!WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
        ++lane_failures;
      }
    }
  }
  // Every module a lane verified is built by now; what the build-ahead lane still does is not needed.
  if (builder > 0) {
    kill(builder, sig ? SIGTERM : SIGKILL);
    while (waitpid(builder, nullptr, 0) < 0 && errno == EINTR) {}
  }
  // A failed write ends the audit with its one line: the summary would read the failing file.
  if (!db_error.empty()) {
    const bool damaged = db_error.find("the database is damaged") != std::string::npos;
    return fail(db_error + (damaged ? "; the audit stopped" : "; the audit stopped, rerun to continue (what was stored is kept)"));
  }
  if (!sig) sig = watch.take();  // arrived as the last lanes finished: still one line, resumable
  if (sig) return interrupted(sig, o);
  munmap(shared, shared_bytes);
  for (int fd : lock_fds) close(fd);
  db = ResultsDb::open(o.db_path, &error);
  if (!db) return fail(error);
  setup.emplace(finish_time);
  nlohmann::json records = nlohmann::json::array();
  for (const nlohmann::json& r : db->reports(&error)) {
    KernelKey k{r.value("kernel_hash", ""), r.value("manifest_hash", ""), r.value("tool_version", ""), r.value("seed", uint64_t(0))};
    if (mine.count(tuple_of(k))) records.push_back(r);
  }
  if (!error.empty()) return fail(error);
  if (!o.json_path.empty()) {
    // Written beside and renamed: an interrupted write never leaves half a file under the name.
    if (!write_file_atomic(o.json_path, records.dump(2) + "\n")) return fail("cannot write " + o.json_path);
  }
  setup.reset();
  info.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  info.kernels_verified = int(cpu.size() + gpu.size()) - info.checks_only;
  info.overhead_seconds = {double(setup_time.ns.load()) * 1e-9, double(lane_time.ns.load()) * 1e-9,
                           double(finish_time.ns.load()) * 1e-9};
  print_audit_summary(records, info, out);
  if (lane_failures) return fail("an audit lane stopped on a harness error (see above); its kernel is incomplete, rerun to retry");
  for (const nlohmann::json& r : records)
    if (r.value("verdict", "") != "pass") return 1;
  return 0;
}

}  // namespace gauntlet
