// An audit lane process: takes the next kernel, verifies it gate by gate, stores each verdict at once.
//
// Lanes are processes, not threads: RapidCheck, which draws and shrinks the searching gates' cases,
// keeps its state in process-wide statics (rc::detail::ImplicitParam stacks; two searches at once in
// one process crashed in rc::gen::detail::ExecHandler::onGenerate), so within a process its replays
// take turns (run_property), and lanes in processes of their own never wait for each other's.
#include "audit_lane.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <thread>

#include "host_lock.h"
#include "gauntlet/common/interrupt.h"
#include "gauntlet/run/standard_check.h"

namespace gauntlet {

void set_lane_gate_jobs(const AuditOptions& options, bool host_lock, VerifyOptions* vo) {
  // A CPU lane runs up to --jobs gates of its kernel at once (verify's threads), so the last
  // kernels of an audit (a hanging one: a timeout per gate) do not leave the other cores idle.
  vo->jobs = host_lock ? std::max(1, options.jobs) : 1;
  // A CUDA kernel runs its gates as verify --gpu-jobs does: fresh contexts are the floor, and one
  // gate at a time leaves the driver idle while that gate computes its oracles and judges.
  vo->gpu_jobs = std::max(1, options.gpu_gate_jobs);
}

namespace {

void send(int fd, const std::string& line) {
  // One write of a short line: atomic on a pipe (under PIPE_BUF), never interleaved between lanes.
  if (fd >= 0 && write(fd, line.data(), line.size()) < 0) {}
}

uint32_t gate_bit(const std::vector<std::string>& gates, const std::string& name) {
  for (size_t g = 0; g < gates.size(); ++g)
    if (gates[g] == name) return 1u << g;
  return 0;
}

// The field's standard check (standard_check.h), with a correctness gate's share of the host lock,
// in a thread of its own: a CPU lane with --jobs > 1 runs it beside the kernel's correctness gates
// (its timing is deferred, so nothing measures beside it, and a hanging kernel's check waits out
// its --timeout together with the gates' instead of after them); other lanes, whose verify call
// ends with the timing gate, run it after the gates. Stored at once: a rerun does not repeat it.
struct CheckRun {
  std::thread thread;
  StandardCheck result;
};

// A CPU lane times its kernels after its last correctness gate: deferred, with the correctness
// verdicts they passed. A kernel's record is written when its last gate is in.
struct Deferred {
  size_t index;
  std::map<std::string, GateVerdict> known;
};

class Lane {
 public:
  Lane(const LaneConfig& c, std::unique_ptr<ResultsDb> db) : c_(c), o_(*c.options), db_(std::move(db)), launcher_(c.sandbox), host_(c) {
    for (const std::string& g : c_.gates)
      if (g != "timing") correctness_.push_back(g);
  }
  int run();

 private:
  template <class F>
  auto timed(F&& f) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = f();
    overhead_ns_ += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
    return r;
  }
  bool has_timing() const { return correctness_.size() < c_.gates.size(); }
  VerifyOptions options_for(const AuditWork& w);
  bool finish(const AuditWork& w, const std::optional<KernelReport>& report);
  void harness_fault(const AuditWork& w, const std::exception& e);
  void start_check(const AuditWork& w, CheckRun& run);
  void store_check(const AuditWork& w, CheckRun& run);
  bool verify_next(size_t i);
  bool check_only(const AuditWork& w);
  LaneShare* offer_gates(size_t i, const AuditWork& w, VerifyOptions* vo);
  bool steal_one();
  void time_deferred();

  const LaneConfig& c_;
  const AuditOptions& o_;
  std::unique_ptr<ResultsDb> db_;  // this process's own connection (one must not cross fork())
  Launcher launcher_;
  HostLock host_;
  std::vector<std::string> correctness_;
  std::vector<Deferred> deferred_;
  int64_t overhead_ns_ = 0;
  bool harness_error_ = false, db_failed_ = false;
  std::string err_, db_err_;
};

VerifyOptions Lane::options_for(const AuditWork& w) {
  VerifyOptions vo = o_.verify;
  vo.progress = false;
  set_lane_gate_jobs(*c_.options, c_.host_lock, &vo);
  vo.slots = nullptr;
  vo.lent_slots = c_.host_lock ? c_.lent_slots : nullptr;
  vo.known = w.known;
  vo.on_gate = [this, key = w.key](const GateVerdict& v) {
    if (!timed([&] { return db_->put_gate(key, v, &db_err_); })) db_failed_ = true;
    send(c_.progress_fd, std::string("g ") + status_name(v.status) + "\n");
  };
  return vo;
}

// The kernel's record, now that all its gates are in. False: the database failed (a gate's write
// or this one), and the lane stops.
bool Lane::finish(const AuditWork& w, const std::optional<KernelReport>& report) {
  if (db_failed_) {
    err_ = db_err_;
    return false;
  }
  const KernelManifest& m = *w.entry.manifest;
  KernelRecord rec{w.entry.entry, m.op, m.device, "", nullptr, "", w.entry.info, nullptr};
  if (!report) {  // a manifest verify refuses (unknown op, dtype outside the schema): a bad entry
    rec.verdict = "error";
    rec.entry_error = err_;
  } else {
    rec.verdict = report->verdict;
    rec.report = timed([&] { return report_to_json(*report); });
  }
  if (!timed([&] { return db_->put_kernel(w.key, rec, &err_); })) {
    db_failed_ = true;
    return false;
  }
  send(c_.progress_fd, "k " + rec.verdict + "\n");
  return true;
}

// gauntlet's own fault, not the entry's: the kernel is left incomplete (a rerun retries it).
void Lane::harness_fault(const AuditWork& w, const std::exception& e) {
  if (interrupt_requested()) wait_for_interrupt_exit();  // the interrupt's doing, not a fault
  std::fprintf(stderr, "\ngauntlet: harness error on %s: %s\n", w.entry.entry.c_str(), e.what());
  harness_error_ = true;
}

void Lane::start_check(const AuditWork& w, CheckRun& run) {
  if (!w.run_check || run.thread.joinable()) return;
  run.thread = std::thread([&run, this, m = &*w.entry.manifest] {
    host_.gate_enter();
    run.result = run_standard_check(*m, launcher_);
    host_.gate_leave();
  });
}

void Lane::store_check(const AuditWork& w, CheckRun& run) {
  if (!run.thread.joinable()) return;
  run.thread.join();
  if (interrupt_requested()) wait_for_interrupt_exit();  // a verdict the interrupt's kill produced is not stored
  if (!db_failed_ && !timed([&] { return db_->put_standard_check(w.key, standard_check_to_json(run.result), &db_err_); }))
    db_failed_ = true;
}

// Its gates and record are stored: the check alone, then the kernel counts as done.
bool Lane::check_only(const AuditWork& w) {
  CheckRun check;
  start_check(w, check);
  store_check(w, check);
  if (db_failed_) {
    err_ = db_err_;
    return false;
  }
  std::string why;
  auto stored = db_->kernel(w.key, &why);
  send(c_.progress_fd, "k " + (stored ? stored->verdict : std::string("error")) + "\n");
  return true;
}

// With work stealing, this kernel's gates may be taken by lanes with nothing left (steal_one):
// each is claimed by one lane, and a gate another took is awaited until that lane stored it.
LaneShare* Lane::offer_gates(size_t i, const AuditWork& w, VerifyOptions* vo) {
  LaneShare* me = c_.shares ? &c_.shares[c_.self] : nullptr;
  if (!me) return nullptr;
  uint32_t stored = 0;
  for (const auto& [name, v] : w.known) stored |= gate_bit(c_.gates, name);
  const uint64_t tag = (uint64_t(i) + 1) << 32;
  me->done.store(tag);
  me->hang_shown.store(false);
  me->oom_shown.store(false);
  me->claims.store(tag | stored);
  vo->claim = [me, this](const std::string& gate) {
    const uint32_t bit = gate_bit(c_.gates, gate);
    return (me->claims.fetch_or(bit) & bit) == 0;
  };
  vo->await_taken = [this, me, tag, key = w.key](const std::string& gate) {
    const uint64_t want = tag | gate_bit(c_.gates, gate);
    while ((me->done.load() & want) != want) usleep(20000);
    std::string why;
    auto stored_now = db_->gates(key, &why);
    if (auto it = stored_now.find(gate); it != stored_now.end()) return it->second;
    GateVerdict v;
    v.name = gate;
    v.status = Status::HarnessError;
    v.category = Category::HarnessError;
    v.message = "the audit lane that took this gate stored no verdict" + (why.empty() ? "" : ": " + why);
    return v;
  };
  vo->hang_shown_alone = &me->hang_shown;
  vo->oom_shown_alone = &me->oom_shown;
  return me;
}

// Verifies kernel `i` of the work list. False: the database failed and the lane stops.
bool Lane::verify_next(size_t i) {
  const AuditWork& w = (*c_.work)[i];
  const KernelManifest& m = *w.entry.manifest;
  if (w.check_only) return check_only(w);
  KernelRecord rec{w.entry.entry, m.op, m.device, "", nullptr, "", w.entry.info, nullptr};
  if (!timed([&] { return db_->put_kernel(w.key, rec, &err_); })) {  // in progress: entry, op, device
    db_failed_ = true;
    return false;
  }
  VerifyOptions vo = options_for(w);
  LaneShare* me = offer_gates(i, w, &vo);
  std::optional<KernelReport> report;
  bool defer = false;
  CheckRun check;
  // The launcher's Python mode is the kernel's for the check and verify alike, set before both:
  // each sets the same value and puts back the same value, never another's mid-run.
  launcher_.set_python_module(is_python_module(m));
  if (c_.host_lock) start_check(w, check);  // beside the correctness gates (above)
  try {
    if (!c_.host_lock || !has_timing()) {
      vo.gates = c_.gates;
      report = verify_kernel(m, vo, launcher_, &err_);
      if (me) me->claims.store(0);
    } else {
      // The correctness gates under the shared lock. A kernel that failed one has its timing
      // skip at once; one that passed them all is timed later, with the lane's other passes.
      vo.gates = correctness_;
      vo.gate_section = [this](bool enter) { enter ? host_.gate_enter() : host_.gate_leave(); };
      report = verify_kernel(m, vo, launcher_, &err_);
      vo.gate_section = nullptr;
      vo.claim = nullptr;
      if (me) me->claims.store(0);  // every gate is in: nothing of this kernel left to take
      if (report) {
        bool failed = false;
        for (const GateVerdict& v : report->gates) vo.known[v.name] = v, failed |= is_failing(v.status);
        if (failed) {
          vo.gates = c_.gates;
          report = verify_kernel(m, vo, launcher_, &err_);
        } else {
          deferred_.push_back({i, vo.known});
          defer = true;
        }
      }
    }
  } catch (const std::exception& e) {
    if (me) me->claims.store(0);
    harness_fault(w, e);
    store_check(w, check);
    return true;
  }
  if (report) start_check(w, check);  // after the gates (a manifest verify refused has nothing to check)
  store_check(w, check);
  if (defer && !db_failed_) return true;
  return finish(w, report);
}

// Nothing left to take: this lane takes gates of the kernels other lanes are still verifying, one
// at a time, each claimed by a compare-and-swap on that lane's claims word (so a gate runs in
// exactly one lane) and run in this process, where RapidCheck is free; the owner waits for the
// verdict, stored here, when its other gates are done.
bool Lane::steal_one() {
  for (size_t j = 0; j < c_.share_count && !db_failed_; ++j) {
    if (j == c_.self) continue;
    LaneShare& s = c_.shares[j];
    uint64_t word = s.claims.load();
    while (word >> 32) {
      const size_t k = size_t(word >> 32) - 1;
      int pick = -1;
      for (size_t g = 0; g < c_.gates.size() && pick < 0; ++g)
        if (c_.gates[g] != "timing" && (uint32_t(word) & (1u << g)) == 0) pick = int(g);
      if (pick < 0) break;
      if (!s.claims.compare_exchange_weak(word, word | (1u << pick))) continue;  // word reloaded
      const AuditWork& w = (*c_.work)[k];
      VerifyOptions vo = options_for(w);
      vo.gates = {c_.gates[size_t(pick)]};
      vo.gate_section = [this](bool enter) { enter ? host_.gate_enter() : host_.gate_leave(); };
      vo.hang_shown_alone = &s.hang_shown;
      vo.oom_shown_alone = &s.oom_shown;
      std::string why;
      try {
        verify_kernel(*w.entry.manifest, vo, launcher_, &why);
      } catch (const std::exception& e) {
        harness_fault(w, e);
      }
      // Stored (or the owner reports it missing: never left waiting), for that kernel only.
      const uint64_t tag = word & ~uint64_t(0xffffffffu);
      for (uint64_t d = s.done.load(); (d & ~uint64_t(0xffffffffu)) == tag &&
                                       !s.done.compare_exchange_weak(d, d | (1u << pick));) {
      }
      send(c_.progress_fd, "s\n");
      return true;
    }
  }
  return false;
}

// The lane's deferred timing gates, under one exclusive hold of the host lock. Taken per kernel,
// each take would wait for the gates other lanes started meanwhile (a hanging kernel's are a
// --timeout each); measured on the CPU corpus, timing inside the kernel loop left one core idle
// behind every such wait (docs/audit.md, "Speed").
void Lane::time_deferred() {
  Held held(host_, true);
  for (const Deferred& d : deferred_) {
    const AuditWork& w = (*c_.work)[d.index];
    VerifyOptions vo = options_for(w);
    vo.known = d.known;
    vo.gates = c_.gates;
    std::optional<KernelReport> report;
    try {
      report = verify_kernel(*w.entry.manifest, vo, launcher_, &err_);
    } catch (const std::exception& e) {
      harness_fault(w, e);
      continue;
    }
    if (!finish(w, report)) break;
  }
}

int Lane::run() {
  for (size_t i; (i = c_.next->fetch_add(1)) < c_.work->size();)
    if (!verify_next(i)) break;
  if (c_.shares && !db_failed_)
    while (steal_one()) {
    }
  // Then this lane's slots go to the lanes still verifying (a hanging kernel's wall-clock
  // timeouts then run several at once instead of waiting for each other).
  if (c_.host_lock && c_.lent_slots) c_.lent_slots->fetch_add(std::max(1, c_.options->jobs));
  if (!deferred_.empty() && !db_failed_) time_deferred();
  send(c_.progress_fd, "o " + std::to_string(overhead_ns_) + "\n");
  if (db_failed_) {  // the parent says it, once, whichever lanes saw it
    std::string line = err_;
    std::replace(line.begin(), line.end(), '\n', ' ');
    send(c_.progress_fd, "d " + line + "\n");
    return 3;
  }
  return harness_error_ ? 4 : 0;
}

}  // namespace

int run_lane(const LaneConfig& c) {
  std::string err;
  // A connection of this process's own (an SQLite connection must not cross fork()).
  auto db = ResultsDb::open(c.options->db_path, &err);
  if (!db) {
    std::fprintf(stderr, "\ngauntlet: error: %s\n", err.c_str());
    return 3;
  }
  return Lane(c, std::move(db)).run();
}

}  // namespace gauntlet
