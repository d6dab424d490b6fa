// The audit's lane processes: shared memory and lock files they inherit, the fork, and the
// progress pipe the parent reads until every lane has exited.
#include "lane_pool.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "gauntlet/common/interrupt.h"

namespace gauntlet {

InterruptWatch::InterruptWatch() {
  sigemptyset(&both);
  sigaddset(&both, SIGINT);
  sigaddset(&both, SIGTERM);
  sigaddset(&both, SIGHUP);  // the terminal closed: stopped as by SIGTERM, resumably
  pthread_sigmask(SIG_BLOCK, &both, nullptr);
  fd = signalfd(-1, &both, SFD_CLOEXEC | SFD_NONBLOCK);
}

InterruptWatch::~InterruptWatch() {
  if (fd >= 0) ::close(fd);
}

int InterruptWatch::take() const {
  signalfd_siginfo si{};
  if (fd >= 0 && read(fd, &si, sizeof si) == ssize_t(sizeof si)) return int(si.ssi_signo);
  return 0;
}

LanePool::~LanePool() { release(); }

// The CPU lanes' host lock (audit_lane.h): two files, which every lane opens itself (a flock
// belongs to an open file, not to a process). Unlinked at once, so that a killed audit leaves
// nothing behind; the lanes reopen them through the descriptors they inherit (/proc/self/fd).
bool LanePool::open_lock_pair(std::string* lock, std::string* turnstile) {
  for (std::string* p : {lock, turnstile}) {
    std::string name = "/tmp/gauntlet-audit-lock-XXXXXX";
    const int fd = mkostemp(name.data(), O_CLOEXEC);
    if (fd < 0) return false;
    unlink(name.c_str());
    lock_fds_.push_back(fd);
    *p = "/proc/self/fd/" + std::to_string(fd);
  }
  return true;
}

bool LanePool::set_up(const AuditOptions& o, const std::vector<std::string>& gates, const std::vector<int>& gpus,
                      const std::vector<AuditWork>& cpu, const std::vector<AuditWork>& gpu, std::string* error) {
  // Lane processes (audit_lane.cpp says why not threads), taking kernels from shared counters.
  // After them, the gate slots that CPU lanes with nothing left to take lend the others.
  shared_bytes_ = 2 * sizeof(std::atomic<size_t>) + sizeof(std::atomic<int>);
  shared_ = mmap(nullptr, shared_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared_ == MAP_FAILED) return (shared_ = nullptr, *error = std::string("cannot map shared memory: ") + strerror(errno), false);
  auto* next = static_cast<std::atomic<size_t>*>(shared_);
  new (&next[0]) std::atomic<size_t>(0);
  new (&next[1]) std::atomic<size_t>(0);
  auto* lent = new (static_cast<char*>(shared_) + 2 * sizeof(std::atomic<size_t>)) std::atomic<int>(0);
  if (pipe2(progress_pipe_, O_CLOEXEC) != 0) return (*error = std::string("cannot create a pipe: ") + strerror(errno), false);
  const int jobs = std::max(1, o.jobs);
  LaneConfig base;
  base.options = &o;
  base.gates = gates;
  base.progress_fd = progress_pipe_[1];
  base.sandbox = o.sandbox;
  // CPU lanes: --jobs of them; correctness gates side by side, a measuring timing gate alone.
  base.work = &cpu;
  base.next = &next[0];
  base.lent_slots = lent;
  base.host_lock = jobs > 1;
  if (base.host_lock && !open_lock_pair(&base.lock_path, &base.turnstile_path))
    return (*error = "cannot create a lock file in /tmp: " + std::string(strerror(errno)), false);
  const size_t cpu_lane_count = std::min<size_t>(size_t(jobs), cpu.size());
  LaneShare* shares = nullptr;
  if (cpu_lane_count > 1) {
    shares_bytes_ = cpu_lane_count * sizeof(LaneShare);
    void* m = mmap(nullptr, shares_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return (*error = std::string("cannot map shared memory: ") + strerror(errno), false);
    shares_ = m;
    shares = static_cast<LaneShare*>(m);
    for (size_t l = 0; l < cpu_lane_count; ++l) new (&shares[l]) LaneShare();
  }
  for (size_t l = 0; l < cpu_lane_count; ++l) {
    LaneConfig c = base;
    c.shares = shares;
    c.share_count = shares ? cpu_lane_count : 0;
    c.self = l;
    lanes_.push_back(c);
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
    lanes_.push_back(c);
  }
  // The module oracle's reference children (one per kernel in flight) share the CPUs out.
  const int reference_threads = reference_threads_for(o.sandbox, int(std::max<size_t>(1, lanes_.size())));
  for (LaneConfig& c : lanes_) c.sandbox.reference_threads = reference_threads;
  return true;
}

void LanePool::start(const InterruptWatch& watch) {
  std::fflush(nullptr);
  for (const LaneConfig& c : lanes_) {
    const pid_t pid = fork();
    if (pid == 0) {
      close(progress_pipe_[0]);
      close(watch.fd);
      install_interrupt_exit("");  // a lane kills its children and exits, silently: the parent says it
      _exit(run_lane(c));  // _exit: the parent's buffers and destructors are not the lane's to run
    }
    if (pid < 0) std::fprintf(stderr, "gauntlet: cannot start an audit lane: %s\n", strerror(errno));
    else pids_.push_back(pid);
  }
  close(progress_pipe_[1]);
  progress_pipe_[1] = -1;
}

// The lanes report each gate and kernel on the pipe; the parent only draws the progress.
LanesEnded LanePool::follow(AuditProgress& progress, const InterruptWatch& watch, int* sig,
                            const std::function<void()>& stop_builder, const std::string& db_path) {
  LanesEnded ended;
  const int from_lanes = progress_pipe_[0];
  std::string buf;
  char chunk[4096];
  for (ssize_t n;;) {
    pollfd pfds[2] = {{from_lanes, POLLIN, 0}, {watch.fd, POLLIN, 0}};
    if (poll(pfds, watch.fd >= 0 ? 2 : 1, -1) < 0 && errno != EINTR) break;
    if (pfds[1].revents & POLLIN) {
      const int got = watch.take();  // read even when a second: left unread, poll would spin
      if (got && !*sig) {
        *sig = got;
        for (pid_t pid : pids_) kill(pid, SIGTERM);  // each lane kills its children, then exits
        stop_builder();
      }
    }
    if (!(pfds[0].revents & (POLLIN | POLLHUP))) continue;
    if ((n = read(from_lanes, chunk, sizeof chunk)) == 0) break;
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
        if (ended.db_error.empty()) {
          ended.db_error = arg;
          for (pid_t pid : pids_) kill(pid, SIGTERM);
          stop_builder();
        }
      } else if (line[0] == 'k') {
        progress.kernel_done(arg);
      } else if (line[0] == 's') {
        ++ended.gates_taken;
      } else if (line[0] == 'o') {
        ended.lane_overhead_ns += std::strtoll(arg.c_str(), nullptr, 10);
      }
    }
  }
  close(progress_pipe_[0]);
  progress_pipe_[0] = -1;
  for (pid_t pid : pids_) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    // Exit 3: a lane whose write failed (its 'd' line, read above, carries the reason).
    if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
      if (ended.db_error.empty()) ended.db_error = "an audit lane could not write the results database " + db_path;
    } else if (ended.db_error.empty() && (!WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
      ++ended.lane_failures;
    }
  }
  pids_.clear();
  return ended;
}

void LanePool::release() {
  if (shared_) munmap(shared_, shared_bytes_), shared_ = nullptr;
  if (shares_) munmap(shares_, shares_bytes_), shares_ = nullptr;
  for (int fd : lock_fds_) close(fd);
  lock_fds_.clear();
  for (int& fd : progress_pipe_)
    if (fd >= 0) close(fd), fd = -1;
}

}  // namespace gauntlet
