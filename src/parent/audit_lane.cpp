// An audit lane process: takes the next kernel, verifies it gate by gate, stores each verdict at once.
//
// Lanes are processes, not threads: RapidCheck, which draws and shrinks the searching gates' cases,
// keeps its state in process-wide statics (rc::detail::ImplicitParam stacks), so two gates searching
// in one process corrupt each other (SIGSEGV in rc::gen::detail::ExecHandler::onGenerate). One gate
// at a time per lane process; --jobs N lanes give N gate processes at once.
#include "audit_lane.h"

#include "gauntlet/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <optional>

namespace gauntlet {
namespace {

void send(int fd, const std::string& line) {
  // One write of a short line: atomic on a pipe (under PIPE_BUF), never interleaved between lanes.
  if (fd >= 0 && write(fd, line.data(), line.size()) < 0) {}
}


// The host lock: shared while correctness gates run, exclusive for a timing gate that will measure.
// The turnstile keeps a waiting timing gate from being starved by lanes taking turns at the shared lock.
class HostLock {
 public:
  HostLock(const LaneConfig& c) : on_(c.host_lock) {
    if (!on_) return;
    lock_ = open(c.lock_path.c_str(), O_RDWR | O_CLOEXEC);
    turnstile_ = open(c.turnstile_path.c_str(), O_RDWR | O_CLOEXEC);
    on_ = lock_ >= 0 && turnstile_ >= 0;
  }
  ~HostLock() {
    if (lock_ >= 0) close(lock_);
    if (turnstile_ >= 0) close(turnstile_);
  }
  void shared() {
    if (!on_) return;
    take(turnstile_, LOCK_EX);
    take(lock_, LOCK_SH);
    flock(turnstile_, LOCK_UN);
  }
  // The shared lock for each running gate of this lane (gate threads): the first gate takes it,
  // the last one out releases it. One description per lane, so the count lives here.
  void gate_enter() {
    if (!on_) return;
    std::unique_lock<std::mutex> lock(gates_mu_);
    if (gates_++ == 0) shared();
  }
  void gate_leave() {
    if (!on_) return;
    std::unique_lock<std::mutex> lock(gates_mu_);
    if (--gates_ == 0) release();
  }
  void exclusive() {
    if (!on_) return;
    take(turnstile_, LOCK_EX);
    take(lock_, LOCK_EX);
  }
  void release() {
    if (!on_) return;
    flock(lock_, LOCK_UN);
    flock(turnstile_, LOCK_UN);
  }

 private:
  static void take(int fd, int op) { flock_retrying(fd, op); }
  bool on_;
  int lock_ = -1, turnstile_ = -1;
  std::mutex gates_mu_;
  int gates_ = 0;
};

struct Held {
  HostLock& lock;
  Held(HostLock& l, bool exclusive) : lock(l) { exclusive ? l.exclusive() : l.shared(); }
  ~Held() { lock.release(); }
};

}  // namespace

int run_lane(const LaneConfig& c) {
  const AuditOptions& o = *c.options;
  int64_t overhead_ns = 0;
  auto timed = [&](auto&& f) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = f();
    overhead_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
    return r;
  };
  std::string err;
  // A connection of this process's own (an SQLite connection must not cross fork()).
  auto db = ResultsDb::open(o.db_path, &err);
  if (!db) {
    std::fprintf(stderr, "\ngauntlet: error: %s\n", err.c_str());
    return 3;
  }
  Launcher launcher(c.sandbox);
  HostLock host(c);
  bool harness_error = false, db_failed = false;
  std::vector<std::string> correctness;
  for (const std::string& g : c.gates)
    if (g != "timing") correctness.push_back(g);
  const bool has_timing = correctness.size() < c.gates.size();

  for (size_t i; (i = c.next->fetch_add(1)) < c.work->size();) {
    const AuditWork& w = (*c.work)[i];
    const KernelManifest& m = *w.entry.manifest;
    KernelRecord rec{w.entry.entry, m.op, m.device, "", nullptr, ""};
    if (!timed([&] { return db->put_kernel(w.key, rec, &err); })) {  // in progress: entry, op, device
      db_failed = true;
      break;
    }
    VerifyOptions vo = o.verify;
    vo.progress = false;
    // A CPU lane runs up to --jobs gates of its kernel at once (verify's threads), so the last
    // kernels of an audit (a hanging one: a timeout per gate) do not leave the other cores idle.
    vo.jobs = c.host_lock ? std::max(1, c.options->jobs) : 1;
    vo.slots = nullptr;
    vo.lent_slots = c.host_lock ? c.lent_slots : nullptr;
    vo.known = w.known;
    std::string db_err;
    vo.on_gate = [&](const GateVerdict& v) {
      if (!timed([&] { return db->put_gate(w.key, v, &db_err); })) db_failed = true;
      send(c.progress_fd, std::string("g ") + status_name(v.status) + "\n");
    };
    std::optional<KernelReport> report;
    try {
      // The correctness gates under the shared lock; then timing, under the exclusive lock only when
      // it will measure (it skips at once after a failure).
      if (!c.host_lock || !has_timing) {
        vo.gates = c.gates;
        report = verify_kernel(m, vo, launcher, &err);
      } else {
        vo.gates = correctness;
        vo.gate_section = [&host](bool enter) { enter ? host.gate_enter() : host.gate_leave(); };
        report = verify_kernel(m, vo, launcher, &err);
        vo.gate_section = nullptr;  // the timing call holds the lock itself, below
        if (report) {
          bool failed = false;
          for (const GateVerdict& v : report->gates) vo.known[v.name] = v, failed |= is_failing(v.status);
          vo.gates = c.gates;
          Held held(host, !failed);
          report = verify_kernel(m, vo, launcher, &err);
        }
      }
    } catch (const std::exception& e) {
      // gauntlet's own fault, not the entry's: left incomplete (a rerun retries it).
      std::fprintf(stderr, "\ngauntlet: harness error on %s: %s\n", w.entry.entry.c_str(), e.what());
      harness_error = true;
      continue;
    }
    if (db_failed) {
      err = db_err;
      break;
    }
    if (!report) {  // a manifest verify refuses (unknown op, dtype outside the schema): a bad entry
      rec.verdict = "error";
      rec.entry_error = err;
    } else {
      rec.verdict = report->verdict;
      rec.report = timed([&] { return report_to_json(*report); });
    }
    if (!timed([&] { return db->put_kernel(w.key, rec, &err); })) {
      db_failed = true;
      break;
    }
    send(c.progress_fd, "k " + rec.verdict + "\n");
  }
  // Nothing left to take: this lane's slots go to the lanes still verifying (a hanging kernel's
  // wall-clock timeouts then run several at once instead of waiting for each other).
  if (c.host_lock && c.lent_slots) c.lent_slots->fetch_add(std::max(1, c.options->jobs));
  send(c.progress_fd, "o " + std::to_string(overhead_ns) + "\n");
  if (db_failed) {
    std::fprintf(stderr, "\ngauntlet: error: %s\n", err.c_str());
    return 3;
  }
  return harness_error ? 4 : 0;
}

}  // namespace gauntlet
