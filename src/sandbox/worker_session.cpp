// Parent side of the sandbox, one child's session: load, requests with GPU turns, the memory watch, categorizing deaths (cases: worker_call.cpp).
#include "gauntlet/sandbox/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <future>
#include <thread>
#include <vector>

#include "gauntlet/common/trace.h"
#include "gauntlet/sandbox/child_start_clock.h"
#include "gauntlet/sandbox/cuda_errors.h"
#include "gauntlet/sandbox/gpu_slots.h"
#include "gauntlet/sandbox/gpu_turn.h"
#include "gauntlet/common/interrupt.h"
#include "gauntlet/kernel_abi.h"


namespace gauntlet {
namespace {

std::string signal_text(int sig) {
  const char* name = sigabbrev_np(sig);
  return name ? std::string("SIG") + name : "signal " + std::to_string(sig);
}

}  // namespace

int64_t resident_memory_bytes(pid_t pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/status", int(pid));
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[4096];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  int64_t kb = 0;
  bool found = false;
  for (const char* key : {"RssAnon:", "RssShmem:"}) {
    if (const char* at = strstr(buf, key)) {
      kb += strtoll(at + strlen(key), nullptr, 10);
      found = true;
    }
  }
  return found ? kb * 1024 : -1;
}

WorkerSession::~WorkerSession() {
  finish();
  for (int fd : {req_fd_, rep_fd_, capture_fd_, status_fd_})
    if (fd >= 0) ::close(fd);
}

std::string WorkerSession::captured_output(size_t max_bytes) const { return read_capture_tail(capture_fd_, max_bytes); }

void WorkerSession::kill_now() {
  if (pid_ > 0 && !finished_) {
    kill(pid_, SIGKILL);
    kill(-pid_, SIGKILL);
  }
}

// Waits for the child and returns its wait status (as the worker saw it, through the pid-namespace
// init when there is one). *exited=false when it had to be killed.
int WorkerSession::wait_status(bool* exited) {
  *exited = true;
  int status = 0;
  int32_t worker_status = -1;
  const int64_t until = std::min(deadline_ms_, wire::now_ms() + 5000);
  if (status_fd_ >= 0) {
    pollfd pfd{status_fd_, POLLIN, 0};
    int64_t left = until - wire::now_ms();
    if (left > 0 && poll(&pfd, 1, int(left)) == 1 && read(status_fd_, &worker_status, 4) == 4) {
    } else {
      worker_status = -1;
    }
  }
  // Reap the direct child (the init, or the worker itself). A pidfd lets us sleep exactly until
  // it exits instead of polling.
  const int pidfd = int(syscall(SYS_pidfd_open, pid_, 0));
  while (true) {
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) break;
    if (r < 0 && errno != EINTR) break;
    if (wire::now_ms() >= until) {
      *exited = false;
      kill_now();
      while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    if (pidfd >= 0) {
      pollfd pfd{pidfd, POLLIN, 0};
      poll(&pfd, 1, int(std::max<int64_t>(1, until - wire::now_ms())));
    } else {
      usleep(1000);
    }
  }
  if (pidfd >= 0) ::close(pidfd);
  unregister_child(pid_);
  finished_ = true;
  if (status_fd_ >= 0) return worker_status;
  return status;
}

Outcome WorkerSession::fail_from_child(wire::ReadStatus rs, const std::string& why) {
  Outcome o;
  o.kind = Outcome::Kind::Died;
  o.category = Category::Crash;
  if (rs == wire::ReadStatus::Timeout) {
    kill_now();
    bool exited;
    wait_status(&exited);
    o.kind = Outcome::Kind::TimedOut;
    o.category = Category::Timeout;
    o.message = "no reply within the " + std::to_string(timeout_seconds_) +
                " s wall-clock limit; the process group was killed";
    return o;
  }
  if (rs == wire::ReadStatus::Garbage) kill_now();
  bool exited = true;
  int status = wait_status(&exited);
  std::string how;
  if (rs == wire::ReadStatus::Garbage) {
    how = "protocol violation (" + why + "): the child corrupted its reply channel";
  } else if (status == -1) {
    how = "the child vanished without a status";
  } else if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    how = "killed by " + signal_text(sig);
    if (sig == SIGXCPU) {
      o.kind = Outcome::Kind::TimedOut;
      o.category = Category::Timeout;
      how += " (CPU time limit)";
    } else if (sig == SIGKILL && exited) {
      o.kind = Outcome::Kind::OutOfMemory;
      o.category = Category::OutOfMemory;
      how += " from outside (the kernel out-of-memory killer)";
    }
  } else if (WIFEXITED(status)) {
    how = "exited with status " + std::to_string(WEXITSTATUS(status)) + " before replying";
  }
  std::string tail = read_capture_tail(capture_fd_, 300);
  o.message = how + (tail.empty() ? "" : "; output: " + tail);
  return o;
}

int reference_threads_for(const SandboxOptions& options, int kernels_in_flight) {
  if (options.reference_threads > 0) return options.reference_threads;
  const long cpus = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  return int(std::max(1L, cpus / std::max(1, kernels_in_flight)));
}

Outcome WorkerSession::load(const std::string& so_path, const std::string& entry, uint8_t poison,
                            int threads) {
  wire::LoadRequest req;
  req.so_path = so_path;
  req.entry = entry;
  req.poison_byte = poison;
  req.intra_op_threads = threads;
  return load(req);
}

Outcome WorkerSession::load(const wire::LoadRequest& req) {
  cuda_ = req.device == "cuda";
  kernel_ = req.so_path;
  if (launcher_) {
    const SandboxOptions& opt = launcher_->options_;
    resident_limit_ = opt.resident_limit_bytes > 0 ? opt.resident_limit_bytes
                      : cuda_                      ? opt.memory_limit_bytes
                                                   : 0;
  }
  // A CUDA child starts CUDA once it has read the Load frame: it waits for a start slot first.
  // (A fake device's CPU children take start slots as its turns, for tests; other CPU children
  // have no turn lock, and GpuSlot takes nothing without one: gpu_turn_lock_for.)
  std::optional<GpuSlot> start_slot;
  if (launcher_ && launcher_->options_.gpu_start_slots > 0) {
    start_slot.emplace(gpu_turn_lock_for(launcher_->options_, cuda_), GpuSlot::kStart, launcher_->options_.gpu_start_slots);
    start_slot_ = &*start_slot;
    start_slot_release_ms_ = wire::now_ms() + int64_t(launcher_->options_.gpu_start_slot_bound_seconds * 1000);
  }
  wire::write_frame(req_fd_, wire::FrameType::Load, wire::encode(req));
  const int64_t load_sent_ns = monotonic_ns();
  wire::Frame f;
  std::string why;
  Outcome over;
  bool over_limit = false;
  // A Python module's load is its build (SandboxOptions::module_load_seconds).
  const bool builds_while_loading = launcher_ && launcher_->python_;
  const int gate_seconds = timeout_seconds_;
  if (builds_while_loading) {
    // The module's build child has exactly --build-timeout; a gate child's import at least the
    // gate's own limit as well (it builds nothing, but imports torch and the module).
    const bool build_child = req.entry.rfind("build:", 0) == 0;
    timeout_seconds_ = build_child ? launcher_->options_.module_load_seconds
                                   : std::max(gate_seconds, launcher_->options_.module_load_seconds);
    deadline_ms_ = build_child ? wire::now_ms() + int64_t(timeout_seconds_) * 1000
                               : std::max(deadline_ms_, wire::now_ms() + int64_t(timeout_seconds_) * 1000);
  }
  wire::ReadStatus rs = read_reply(&f, &why, &over, &over_limit);
  const int64_t reply_read_ns = monotonic_ns();
  start_slot_ = nullptr;
  start_slot.reset();
  if (builds_while_loading && rs == wire::ReadStatus::Ok) {
    timeout_seconds_ = gate_seconds;
    deadline_ms_ = wire::now_ms() + int64_t(gate_seconds) * 1000;
  }
  if (over_limit) {
    over.message = "while loading the kernel: " + over.message;
    return over;
  }
  if (rs != wire::ReadStatus::Ok) {
    Outcome o = fail_from_child(rs, why);
    if (o.kind == Outcome::Kind::Died) o.message = "while loading the kernel: " + o.message;
    return o;
  }
  wire::LoadReply rep;
  Outcome o;
  if (special_frame(f, &o)) {
    o.message = "while loading the kernel: " + o.message;
    return o;
  }
  if (f.type != wire::FrameType::LoadReply || !wire::decode(f.payload, &rep, &why)) {
    kill_now();
    o.kind = Outcome::Kind::Died;
    o.category = Category::Crash;
    o.message = "protocol violation while loading: unexpected frame";
    return o;
  }
  notes_ = rep.sandbox_notes;
  device_info_ = rep.device_info;
  note_child_start(load_sent_ns, reply_read_ns, device_info_);  // CUDA children stamp their start
  trace_child_start(load_sent_ns, reply_read_ns, device_info_,
                    "queues=" + std::to_string(req.hardware_queues) + " " + kernel_.substr(kernel_.rfind('/') + 1));
  if (launcher_ && !device_info_.empty()) {
    std::lock_guard<std::recursive_mutex> lock(launcher_->mu_);
    launcher_->device_info_ = device_info_;
  }
  if (!rep.ok) {
    const bool harness = rep.error.rfind("harness:", 0) == 0;
    o.kind = harness ? Outcome::Kind::HarnessError : Outcome::Kind::LoadFailed;
    o.category = harness ? Category::HarnessError : Category::LoadError;
    o.message = rep.error;
    return o;
  }
  signature_ = rep.signature;
  return o;
}

// A Signal or Violation frame: the child reported its own death. Kill, reap, categorize.
bool WorkerSession::special_frame(const wire::Frame& f, Outcome* out) {
  Outcome& o = *out;
  if (f.type == wire::FrameType::Signal) {
    wire::Reader r(f.payload);
    uint64_t sig = 0;
    r.u64(&sig);
    bool exited;
    kill_now();
    wait_status(&exited);
    o.kind = Outcome::Kind::Died;
    o.category = Category::Crash;
    o.message = "killed by " + signal_text(int(sig));
    std::string tail = read_capture_tail(capture_fd_, 300);
    if (!tail.empty()) o.message += "; output: " + tail;
    return true;
  }
  if (f.type == wire::FrameType::Violation) {
    wire::Reader r(f.payload);
    uint64_t nr = 0;
    r.u64(&nr);
    char* name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, int(nr));
    std::string sys = name ? name : "#" + std::to_string(nr);
    free(name);
    bool exited;
    kill_now();
    wait_status(&exited);
    o.kind = Outcome::Kind::Died;
    o.category = Category::Crash;
    o.message = "sandbox violation: the kernel called the forbidden system call " + sys;
    return true;
  }
  return false;
}

void WorkerSession::take_gpu_turn(std::optional<GpuTurn>& turn, TurnNeed need) {
  if (!launcher_) return;
  const SandboxOptions& opt = launcher_->options();
  const std::string lock_path = gpu_turn_lock_for(opt, cuda_);
  if (lock_path.empty()) return;
  const int64_t t0 = wire::now_ms();
  {
    // A sibling past its bound still runs on the GPU: wait for it (Launcher::overrunning_).
    std::unique_lock<std::mutex> lock(launcher_->overrun_mu_);
    launcher_->overrun_cv_.wait(lock, [&] { return launcher_->overrunning_ - (overrunning_ ? 1 : 0) <= 0; });
  }
  turn.emplace(lock_path, need, opt.gpu_turn_slots_while_overrun);
  // Checked once the turn is held: no child can start overrunning until it is given back.
  if (watch_shared_ && turn->outer() && GpuTurn::overrun_in_progress(lock_path)) gpu_shared_ = true;
  deadline_ms_ += wire::now_ms() - t0;  // waiting for the GPU is not the kernel's time
}

void WorkerSession::begin_overrun() {
  if (!launcher_ || overrunning_) return;
  overrunning_ = true;
  CurrentGateSlot::give_up();  // as its turn: the other kernels' gates need not wait out its timeout
  std::lock_guard<std::mutex> lock(launcher_->overrun_mu_);
  ++launcher_->overrunning_;
  launcher_->overran_kernels_.insert(kernel_);
}

double WorkerSession::turn_bound_seconds() {
  if (!launcher_) return 0.0;
  const SandboxOptions& opt = launcher_->options();
  const double bound = opt.gpu_turn_bound_seconds;
  if (bound <= 0) return 0.0;
  if (timed_run_bound_ > 0) return timed_run_bound_;
  std::lock_guard<std::mutex> lock(launcher_->overrun_mu_);
  if (!launcher_->overran_kernels_.count(kernel_)) return bound;
  return std::min(bound, std::max(0.001, opt.gpu_turn_bound_after_overrun_seconds));  // 0 would mean unbounded
}

void WorkerSession::end_overrun() {
  if (!launcher_ || !overrunning_) return;
  overrunning_ = false;
  {
    std::lock_guard<std::mutex> lock(launcher_->overrun_mu_);
    --launcher_->overrunning_;
  }
  launcher_->overrun_cv_.notify_all();
}

Outcome WorkerSession::exchange(wire::FrameType type, const std::string& payload, wire::FrameType reply_type,
                                std::string* reply_payload, Turn mode) {
  Outcome o;
  if (finished_) {
    o.kind = Outcome::Kind::HarnessError;
    o.category = Category::HarnessError;
    o.message = "request to a finished worker";
    return o;
  }
  // --timeout bounds each request, not the gate's whole run: at a problem's own sizes (KernelBench
  // level 2: a [128, 64, 128, 128] input) fourteen correct cases outlast one minute, while a hang
  // still ends at the first case that hangs.
  deadline_ms_ = std::max(deadline_ms_, wire::now_ms() + int64_t(timeout_seconds_) * 1000);
  struct OverrunEnd {  // after the turn below: a sibling waiting for this overrun may go
    WorkerSession* s;
    ~OverrunEnd() { s->end_overrun(); }
  } overrun_end{this};
  std::optional<GpuTurn> turn;
  struct WatchShared {  // take_gpu_turn notes a shared device for this request only
    WorkerSession* s;
    ~WatchShared() { s->watch_shared_ = false; }
  } watch{this};
  watch_shared_ = true;
  wire::Frame f;
  std::string why;
  if (mode == Turn::WorkerAsks) {
    wire::write_frame(req_fd_, type, payload);
    std::string turn_slip;
    const double bound = launcher_ ? launcher_->options().gpu_turn_bound_seconds : 0.0;
    struct TimedRunBound {  // the longer bound for this request only
      WorkerSession* s;
      ~TimedRunBound() { s->timed_run_bound_ = 0; }
    } timed_bound{this};
    timed_run_bound_ = bound > 0 ? bound * kTimedRunBoundFactor : 0.0;
    // Unwatched, as exchange() always was: a timed run holds two input sets and their verified
    // outputs at once, more than any case of the same kernel.
    if (!await_case_reply(turn, &f, &why, &turn_slip, &o, TurnNeed::WholeDevice, /*bounded=*/timed_run_bound_ > 0,
                          /*watch=*/false))
      return o;
    if (!turn_slip.empty()) {
      kill_now();
      bool exited;
      wait_status(&exited);
      o.kind = Outcome::Kind::Died;
      o.category = Category::Crash;
      o.message = "protocol violation: " + turn_slip;
      return o;
    }
  } else {
    take_gpu_turn(turn, mode == Turn::Whole ? TurnNeed::WholeDevice : TurnNeed::Case);
    wire::write_frame(req_fd_, type, payload);
    Outcome unused;
    bool over_limit = false;
    GpuTurn* bounded_turn = mode == Turn::Bounded && turn ? &*turn : nullptr;
    wire::ReadStatus rs = read_reply(&f, &why, &unused, &over_limit, bounded_turn, /*watch=*/false);
    if (rs != wire::ReadStatus::Ok) return fail_from_child(rs, why);
  }
  if (special_frame(f, &o)) return o;
  if (f.type != reply_type) {
    kill_now();
    bool exited;
    wait_status(&exited);
    o.kind = Outcome::Kind::Died;
    o.category = Category::Crash;
    o.message = "protocol violation: unexpected reply frame";
    return o;
  }
  *reply_payload = std::move(f.payload);
  return o;
}

wire::ReadStatus WorkerSession::read_reply(wire::Frame* f, std::string* why, Outcome* over, bool* over_limit,
                                           GpuTurn* turn, bool watch) {
  *over_limit = false;
  watch = watch && resident_limit_ > 0;
  const double bound = turn ? turn_bound_seconds() : 0.0;
  auto bounded = [&] { return turn && turn->outer() && !turn->overran() && bound > 0; };
  // Sample every 20 ms until the reply starts (or the deadline), and once more when it has come:
  // a child that grew past the limit while computing is killed even if it managed to reply.
  auto check = [&]() {
    if (!watch) return false;
    const int64_t rss = resident_memory_bytes(pid_);
    if (rss <= resident_limit_) return false;
    kill_now();
    bool exited;
    wait_status(&exited);
    *over_limit = true;
    over->kind = Outcome::Kind::OutOfMemory;
    over->category = Category::OutOfMemory;
    over->message = "host memory: the child's resident memory reached " + std::to_string(rss >> 20) +
                    " MiB, over the --memory-limit of " + std::to_string(resident_limit_ >> 20) + " MiB" +
                    (cuda_ ? " (a CUDA child has no RLIMIT_DATA; the parent watches its resident set)" : "") +
                    "; the process group was killed";
    return true;
  };
  auto slot_held = [&] { return start_slot_ && start_slot_->held(); };
  while (watch || bounded() || slot_held()) {
    int64_t slice = deadline_ms_ - wire::now_ms();
    if (slice <= 0) break;
    if (watch) slice = std::min<int64_t>(slice, 20);
    if (slot_held()) {
      const int64_t to_release = start_slot_release_ms_ - wire::now_ms();
      if (to_release <= 0) {
        start_slot_->release();  // a load this slow is not the driver's: the next child may start
        continue;
      }
      slice = std::min(slice, to_release);
    }
    if (bounded()) {
      const int64_t to_bound = int64_t((bound - turn->held_seconds()) * 1000);
      if (to_bound <= 0) {
        turn->overrun();  // the GPU goes to the next child; this one runs on beside it
        begin_overrun();
        if (timed_run_bound_ > 0) gpu_shared_ = true;  // the rest of the timed run is time-sliced
        continue;
      }
      slice = std::min(slice, to_bound);
    }
    pollfd pfd{rep_fd_, POLLIN, 0};
    const int r = poll(&pfd, 1, int(std::max<int64_t>(slice, 1)));
    if (check()) return wire::ReadStatus::Eof;
    if (r > 0) break;
  }
  wire::ReadStatus rs = wire::read_frame(rep_fd_, f, deadline_ms_, why);
  if (rs == wire::ReadStatus::Ok && check()) return wire::ReadStatus::Eof;
  return rs;
}

void WorkerSession::finish() {
  if (finished_ || pid_ <= 0) return;
  trace::interval("session", started_ns_, monotonic_ns(), cuda_ ? "cuda" : "cpu");
  wire::write_frame(req_fd_, wire::FrameType::Bye, "");
  if (req_fd_ >= 0) ::close(req_fd_), req_fd_ = -1;
  if (launcher_) {
    // The verdict does not wait for the child's teardown: the launcher reaps it later, and
    // kills it if it has not left within the grace period.
    std::lock_guard<std::recursive_mutex> lock(launcher_->mu_);
    launcher_->exiting_.push_back({pid_, wire::now_ms() + 2000});
    finished_ = true;
    return;
  }
  deadline_ms_ = std::min(deadline_ms_, wire::now_ms() + 2000);
  bool exited;
  wait_status(&exited);
}

}  // namespace gauntlet
