// An audit lane process: takes the next kernel, verifies it gate by gate, stores each verdict at once.
//
// Lanes are processes, not threads: RapidCheck, which draws and shrinks the searching gates' cases,
// keeps its state in process-wide statics (rc::detail::ImplicitParam stacks; two searches at once in
// one process crashed in rc::gen::detail::ExecHandler::onGenerate), so within a process its replays
// take turns (run_property), and lanes in processes of their own never wait for each other's.
#include "audit_lane.h"

#include "gauntlet/common/interrupt.h"
#include "gauntlet/sandbox/file_lock.h"
#include "gauntlet/run/standard_check.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <optional>
#include <thread>

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

uint32_t gate_bit(const std::vector<std::string>& gates, const std::string& name) {
  for (size_t g = 0; g < gates.size(); ++g)
    if (gates[g] == name) return 1u << g;
  return 0;
}

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

  // A CPU lane times its kernels after its last correctness gate (below): deferred, with the
  // correctness verdicts they passed. A kernel's record is written when its last gate is in.
  struct Deferred {
    size_t index;
    std::map<std::string, GateVerdict> known;
  };
  std::vector<Deferred> deferred;
  std::string db_err;
  auto options_for = [&](const AuditWork& w) {
    VerifyOptions vo = o.verify;
    vo.progress = false;
    // A CPU lane runs up to --jobs gates of its kernel at once (verify's threads), so the last
    // kernels of an audit (a hanging one: a timeout per gate) do not leave the other cores idle.
    vo.jobs = c.host_lock ? std::max(1, c.options->jobs) : 1;
    vo.slots = nullptr;
    vo.lent_slots = c.host_lock ? c.lent_slots : nullptr;
    vo.known = w.known;
    vo.on_gate = [&, key = w.key](const GateVerdict& v) {
      if (!timed([&] { return db->put_gate(key, v, &db_err); })) db_failed = true;
      send(c.progress_fd, std::string("g ") + status_name(v.status) + "\n");
    };
    return vo;
  };
  // The kernel's record, now that all its gates are in. False: the database failed (a gate's
  // write or this one), and the lane stops.
  auto finish = [&](const AuditWork& w, const std::optional<KernelReport>& report) {
    if (db_failed) {
      err = db_err;
      return false;
    }
    const KernelManifest& m = *w.entry.manifest;
    KernelRecord rec{w.entry.entry, m.op, m.device, "", nullptr, "", w.entry.info, nullptr};
    if (!report) {  // a manifest verify refuses (unknown op, dtype outside the schema): a bad entry
      rec.verdict = "error";
      rec.entry_error = err;
    } else {
      rec.verdict = report->verdict;
      rec.report = timed([&] { return report_to_json(*report); });
    }
    if (!timed([&] { return db->put_kernel(w.key, rec, &err); })) {
      db_failed = true;
      return false;
    }
    send(c.progress_fd, "k " + rec.verdict + "\n");
    return true;
  };
  // gauntlet's own fault, not the entry's: the kernel is left incomplete (a rerun retries it).
  auto harness_fault = [&](const AuditWork& w, const std::exception& e) {
    if (interrupt_requested()) wait_for_interrupt_exit();  // the interrupt's doing, not a fault
    std::fprintf(stderr, "\ngauntlet: harness error on %s: %s\n", w.entry.entry.c_str(), e.what());
    harness_error = true;
  };

  // The field's standard check (standard_check.h), with a correctness gate's share of the host lock,
  // in a thread of its own: a CPU lane with --jobs > 1 runs it beside the kernel's correctness gates
  // (its timing is deferred, so nothing measures beside it, and a hanging kernel's check waits out
  // its --timeout together with the gates' instead of after them); other lanes, whose verify call
  // ends with the timing gate, run it after the gates. Stored at once: a rerun does not repeat it.
  struct CheckRun {
    std::thread thread;
    StandardCheck result;
  };
  auto start_check = [&](const AuditWork& w, CheckRun& run) {
    if (!w.run_check || run.thread.joinable()) return;
    run.thread = std::thread([&run, &host, &launcher, m = &*w.entry.manifest] {
      host.gate_enter();
      run.result = run_standard_check(*m, launcher);
      host.gate_leave();
    });
  };
  auto store_check = [&](const AuditWork& w, CheckRun& run) {
    if (!run.thread.joinable()) return;
    run.thread.join();
    if (interrupt_requested()) wait_for_interrupt_exit();  // a verdict the interrupt's kill produced is not stored
    if (!db_failed && !timed([&] { return db->put_standard_check(w.key, standard_check_to_json(run.result), &db_err); }))
      db_failed = true;
  };

  for (size_t i; (i = c.next->fetch_add(1)) < c.work->size();) {
    const AuditWork& w = (*c.work)[i];
    const KernelManifest& m = *w.entry.manifest;
    if (w.check_only) {  // its gates and record are stored: the check alone, then the kernel counts as done
      CheckRun check;
      start_check(w, check);
      store_check(w, check);
      if (db_failed) {
        err = db_err;
        break;
      }
      std::string why;
      auto stored = db->kernel(w.key, &why);
      send(c.progress_fd, "k " + (stored ? stored->verdict : std::string("error")) + "\n");
      continue;
    }
    KernelRecord rec{w.entry.entry, m.op, m.device, "", nullptr, "", w.entry.info, nullptr};
    if (!timed([&] { return db->put_kernel(w.key, rec, &err); })) {  // in progress: entry, op, device
      db_failed = true;
      break;
    }
    VerifyOptions vo = options_for(w);
    LaneShare* me = c.shares ? &c.shares[c.self] : nullptr;
    if (me) {  // this kernel's gates may be taken by lanes with nothing left (steal_one, below)
      uint32_t stored = 0;
      for (const auto& [name, v] : w.known) stored |= gate_bit(c.gates, name);
      const uint64_t tag = (uint64_t(i) + 1) << 32;
      me->done.store(tag);
      me->hang_shown.store(false);
      me->oom_shown.store(false);
      me->claims.store(tag | stored);
      vo.claim = [me, &c](const std::string& gate) {
        const uint32_t bit = gate_bit(c.gates, gate);
        return (me->claims.fetch_or(bit) & bit) == 0;
      };
      vo.await_taken = [&, me, tag, key = w.key](const std::string& gate) {
        const uint64_t want = tag | gate_bit(c.gates, gate);
        while ((me->done.load() & want) != want) usleep(20000);
        std::string why;
        auto stored_now = db->gates(key, &why);
        if (auto it = stored_now.find(gate); it != stored_now.end()) return it->second;
        GateVerdict v;
        v.name = gate;
        v.status = Status::HarnessError;
        v.category = Category::HarnessError;
        v.message = "the audit lane that took this gate stored no verdict" + (why.empty() ? "" : ": " + why);
        return v;
      };
      vo.hang_shown_alone = &me->hang_shown;
      vo.oom_shown_alone = &me->oom_shown;
    }
    std::optional<KernelReport> report;
    bool defer = false;
    CheckRun check;
    // The launcher's Python mode is the kernel's for the check and verify alike, set before both:
    // each sets the same value and puts back the same value, never another's mid-run.
    launcher.set_python_module(is_python_module(m));
    if (c.host_lock) start_check(w, check);  // beside the correctness gates (above)
    try {
      if (!c.host_lock || !has_timing) {
        vo.gates = c.gates;
        report = verify_kernel(m, vo, launcher, &err);
        if (me) me->claims.store(0);
      } else {
        // The correctness gates under the shared lock. A kernel that failed one has its timing
        // skip at once; one that passed them all is timed later, with the lane's other passes.
        vo.gates = correctness;
        vo.gate_section = [&host](bool enter) { enter ? host.gate_enter() : host.gate_leave(); };
        report = verify_kernel(m, vo, launcher, &err);
        vo.gate_section = nullptr;
        vo.claim = nullptr;
        if (me) me->claims.store(0);  // every gate is in: nothing of this kernel left to take
        if (report) {
          bool failed = false;
          for (const GateVerdict& v : report->gates) vo.known[v.name] = v, failed |= is_failing(v.status);
          if (failed) {
            vo.gates = c.gates;
            report = verify_kernel(m, vo, launcher, &err);
          } else {
            deferred.push_back({i, vo.known});
            defer = true;
          }
        }
      }
    } catch (const std::exception& e) {
      if (me) me->claims.store(0);
      harness_fault(w, e);
      store_check(w, check);
      continue;
    }
    if (report) start_check(w, check);  // after the gates (a manifest verify refused has nothing to check)
    store_check(w, check);
    if (defer && !db_failed) continue;
    if (!finish(w, report)) break;
  }
  // Nothing left to take: this lane takes gates of the kernels other lanes are still verifying,
  // one at a time, each claimed by a compare-and-swap on that lane's claims word (so a gate runs
  // in exactly one lane) and run in this process, where RapidCheck is free; the owner waits for
  // the verdict, stored here, when its other gates are done.
  auto steal_one = [&]() -> bool {
    for (size_t j = 0; j < c.share_count && !db_failed; ++j) {
      if (j == c.self) continue;
      LaneShare& s = c.shares[j];
      uint64_t word = s.claims.load();
      while (word >> 32) {
        const size_t k = size_t(word >> 32) - 1;
        int pick = -1;
        for (size_t g = 0; g < c.gates.size() && pick < 0; ++g)
          if (c.gates[g] != "timing" && (uint32_t(word) & (1u << g)) == 0) pick = int(g);
        if (pick < 0) break;
        if (!s.claims.compare_exchange_weak(word, word | (1u << pick))) continue;  // word reloaded
        const AuditWork& w = (*c.work)[k];
        VerifyOptions vo = options_for(w);
        vo.gates = {c.gates[size_t(pick)]};
        vo.gate_section = [&host](bool enter) { enter ? host.gate_enter() : host.gate_leave(); };
        vo.hang_shown_alone = &s.hang_shown;
        vo.oom_shown_alone = &s.oom_shown;
        std::string why;
        try {
          verify_kernel(*w.entry.manifest, vo, launcher, &why);
        } catch (const std::exception& e) {
          harness_fault(w, e);
        }
        // Stored (or the owner reports it missing: never left waiting), for that kernel only.
        const uint64_t tag = word & ~uint64_t(0xffffffffu);
        for (uint64_t d = s.done.load(); (d & ~uint64_t(0xffffffffu)) == tag &&
                                         !s.done.compare_exchange_weak(d, d | (1u << pick));) {
        }
        send(c.progress_fd, "s\n");
        return true;
      }
    }
    return false;
  };
  if (c.shares && !db_failed)
    while (steal_one()) {
    }
  // Then this lane's slots go to the lanes still verifying (a hanging kernel's wall-clock
  // timeouts then run several at once instead of waiting for each other).
  if (c.host_lock && c.lent_slots) c.lent_slots->fetch_add(std::max(1, c.options->jobs));
  // Then the lane's deferred timing gates, under one exclusive hold of the host lock. Taken per
  // kernel, each take would wait for the gates other lanes started meanwhile (a hanging kernel's
  // are a --timeout each); measured on the CPU corpus, timing inside the kernel loop left one core
  // idle behind every such wait (docs/audit.md, "Speed").
  if (!deferred.empty() && !db_failed) {
    Held held(host, true);
    for (const Deferred& d : deferred) {
      const AuditWork& w = (*c.work)[d.index];
      VerifyOptions vo = options_for(w);
      vo.known = d.known;
      vo.gates = c.gates;
      std::optional<KernelReport> report;
      try {
        report = verify_kernel(*w.entry.manifest, vo, launcher, &err);
      } catch (const std::exception& e) {
        harness_fault(w, e);
        continue;
      }
      if (!finish(w, report)) break;
    }
  }
  send(c.progress_fd, "o " + std::to_string(overhead_ns) + "\n");
  if (db_failed) {  // the parent says it, once, whichever lanes saw it
    std::string line = err;
    std::replace(line.begin(), line.end(), '\n', ' ');
    send(c.progress_fd, "d " + line + "\n");
    return 3;
  }
  return harness_error ? 4 : 0;
}

}  // namespace gauntlet
