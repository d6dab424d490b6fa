// Parent side of the sandbox, the launcher: the zygote or fork+exec start of a sandboxed child, its environment, reaping.
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
#include <chrono>

#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <future>
#include <thread>
#include <vector>

#include "gauntlet/common/trace.h"
#include "gauntlet/sandbox/cuda_errors.h"
#include "gauntlet/sandbox/gpu_turn.h"
#include "gauntlet/common/interrupt.h"
#include "gauntlet/kernel_abi.h"

namespace gauntlet {
namespace {

std::string exe_dir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, size_t(n));
  return p.substr(0, p.rfind('/'));
}

// The child's environment: nothing of ours leaks in, only what LibTorch needs to load, and the one
// GPU a CUDA child may use (the CUDA runtime reads these when the child first uses CUDA; the
// parent never does).
std::vector<std::string> scrubbed_env(const SandboxOptions& o) {
  std::vector<std::string> env = {"PATH=/usr/bin:/bin", "HOME=/tmp", "TMPDIR=/tmp", "LANG=C",
                                  "OMP_NUM_THREADS=1", "MALLOC_ARENA_MAX=2"};
  if (const char* v = getenv("LD_LIBRARY_PATH")) env.push_back(std::string("LD_LIBRARY_PATH=") + v);
  env.push_back("CUDA_VISIBLE_DEVICES=" + cuda_visible_devices_for(o.gpu_index, getenv("CUDA_VISIBLE_DEVICES")));
  env.push_back("CUDA_MODULE_LOADING=LAZY");            // load kernels' modules on first use
  env.push_back("PYTORCH_NVML_BASED_CUDA_CHECK=1");     // availability checks without a CUDA context
  // The CUDA worker's poisoning, to compare its settings on one machine (src/worker/device_poison.cpp):
  // "blocks" poisons with whole blocks even where it could by address; the slack bounds the cache.
  // GAUNTLET_CUDA_PRELOAD=0: the kernel's module loads at its first launch, in the turn (kernel_preload.h).
  // GAUNTLET_PAGEABLE_STAGING=1: a case's copies staged in pageable memory (case_transfers.cpp).
  for (const char* name : {"GAUNTLET_CUDA_POISON", "GAUNTLET_CUDA_POISON_SLACK_MIB", "GAUNTLET_CUDA_PRELOAD",
                           "GAUNTLET_PAGEABLE_STAGING"})
    if (const char* v = getenv(name); v && *v) env.push_back(std::string(name) + "=" + v);
  return env;
}

// What a Python module worker adds to the scrubbed environment, zygote or fork+exec'd.
void add_python_worker_env(std::vector<std::string>* env, const std::string& worker_path) {
  env->push_back("PYTHONDONTWRITEBYTECODE=1");
  env->push_back("PYTHONNOUSERSITE=1");
  // The memory gate's poisoned children fill new heap blocks through glibc's M_PERTURB, which
  // glibc's per-thread cache of small blocks bypasses (python/gauntlet_worker/poisons.py, poison_heap).
  env->push_back("GLIBC_TUNABLES=glibc.malloc.tcache_count=0");
  // The frame checksum in C (the pure-Python loop manages ~2 MB/s): built beside the worker.
  const size_t slash = worker_path.rfind('/');
  env->push_back("GAUNTLET_FNV_LIB=" + (slash == std::string::npos ? std::string(".") : worker_path.substr(0, slash)) +
                 "/libgauntlet_fnv.so");
}

std::vector<char*> cstrs(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}


int make_capture_fd() {
  int fd = memfd_create("gauntlet-capture", MFD_CLOEXEC);
  return fd;
}

}  // namespace

bool python_worker_command(const std::string& worker_path, std::vector<std::string>* argv, std::string* error) {
  std::string python;
  if (const char* env = getenv("GAUNTLET_PYTHON"); env && *env) {
    python = env;
  } else {
    for (const char* p : {"/usr/bin/python3", "/usr/local/bin/python3"})
      if (access(p, X_OK) == 0) {
        python = p;
        break;
      }
  }
  if (python.empty() || access(python.c_str(), X_OK) != 0)
    return (*error = "no Python interpreter for the module worker (" +
                     (python.empty() ? std::string("no /usr/bin/python3") : python + " is not executable") +
                     "; install python3 and python3-torch, or set GAUNTLET_PYTHON)", false);
  std::vector<std::string> candidates;
  if (const char* env = getenv("GAUNTLET_PYWORKER"); env && *env) candidates.push_back(env);
  candidates.push_back(exe_dir() + "/python/gauntlet_pyworker.py");
  const size_t slash = worker_path.rfind('/');
  if (slash != std::string::npos) candidates.push_back(worker_path.substr(0, slash) + "/python/gauntlet_pyworker.py");
#ifdef GAUNTLET_SOURCE_DIR
  candidates.push_back(std::string(GAUNTLET_SOURCE_DIR) + "/python/gauntlet_pyworker.py");
#endif
  for (const std::string& c : candidates)
    if (access(c.c_str(), R_OK) == 0) {
      *argv = {python, c};
      return true;
    }
  return (*error = "the Python module worker gauntlet_pyworker.py was not found (looked at " + candidates.front() +
                   " and beside the binaries; set GAUNTLET_PYWORKER)", false);
}

std::string cuda_visible_devices_for(int gpu_index, const char* inherited) {
  const std::string index = std::to_string(gpu_index);
  if (!inherited || !*inherited) return index;
  std::string list = inherited;
  size_t start = 0;
  for (int i = 0; start <= list.size(); ++i) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    if (i == gpu_index) return list.substr(start, end - start);
    start = end + 1;
  }
  return index;  // past the inherited list: the child finds no such GPU and says so
}


int64_t parse_size(const std::string& text) {
  if (text.empty()) return -1;
  size_t i = 0;
  int64_t v = 0;
  while (i < text.size() && isdigit((unsigned char)text[i])) {
    if (v > (INT64_MAX / 10) - 10) return -1;
    v = v * 10 + (text[i++] - '0');
  }
  if (i == 0) return -1;
  std::string suffix = text.substr(i);
  int64_t mul = 1;
  if (suffix.empty() || suffix == "B") mul = 1;
  else if (suffix == "K" || suffix == "k" || suffix == "KiB") mul = int64_t(1) << 10;
  else if (suffix == "M" || suffix == "m" || suffix == "MiB") mul = int64_t(1) << 20;
  else if (suffix == "G" || suffix == "g" || suffix == "GiB") mul = int64_t(1) << 30;
  else return -1;
  if (v > INT64_MAX / mul) return -1;
  return v * mul;
}

std::string read_capture_tail(int fd, size_t max_bytes) {
  if (fd < 0) return {};
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_size <= 0) return {};
  size_t n = std::min<size_t>(size_t(st.st_size), max_bytes);
  std::string out(n, '\0');
  ssize_t k = pread(fd, out.data(), n, st.st_size - off_t(n));
  out.resize(k > 0 ? size_t(k) : 0);
  for (char& c : out)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    else if ((unsigned char)c < 32 || (unsigned char)c > 126) c = '?';
  return out;
}

// Runs fork requests on one long-lived thread (see start_zygote).
class ForkKeeper {
 public:
  ForkKeeper() : thread_([this] { loop(); }) {}
  ~ForkKeeper() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  pid_t run(const std::function<pid_t()>& fork_and_exec) {
    std::promise<pid_t> result;
    std::future<pid_t> pid = result.get_future();
    {
      std::lock_guard<std::mutex> lock(mu_);
      tasks_.push_back([&] { result.set_value(fork_and_exec()); });
    }
    cv_.notify_all();
    return pid.get();
  }

 private:
  void loop() {
    while (true) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
        if (tasks_.empty()) return;
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stop_ = false;
  std::thread thread_;
};

Launcher::Launcher(SandboxOptions options) : options_(std::move(options)) {
  signal(SIGPIPE, SIG_IGN);
  // Grandchildren forked by the zygote are re-parented to us, so we can wait for them.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  worker_path_ = options_.worker_path;
  if (worker_path_.empty()) {
    const char* env = getenv("GAUNTLET_WORKER");
    worker_path_ = env && *env ? env : exe_dir() + "/gauntlet-worker";
  }
  if (options_.namespaces) {
    wanted_ns_ = kNsNet | kNsMount | kNsPid | kNsIpc;
    // GAUNTLET_NAMESPACES narrows the set, e.g. "mount,ipc" (comma-separated; "none" for none).
    if (const char* list = getenv("GAUNTLET_NAMESPACES")) {
      const std::string l = std::string(",") + list + ",";
      wanted_ns_ = 0;
      if (l.find(",net,") != std::string::npos) wanted_ns_ |= kNsNet;
      if (l.find(",mount,") != std::string::npos) wanted_ns_ |= kNsMount;
      if (l.find(",pid,") != std::string::npos) wanted_ns_ |= kNsPid;
      if (l.find(",ipc,") != std::string::npos) wanted_ns_ |= kNsIpc;
    }
    if (geteuid() != 0 && wanted_ns_) wanted_ns_ |= kNsUser;
  }
}

Launcher::~Launcher() {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  reap_exiting(true);
  for (int sock : {zygote_sock_, py_zygote_sock_})
    if (sock >= 0) ::close(sock);
  for (pid_t z : {zygote_pid_, py_zygote_pid_})
    if (z > 0) {
      kill(z, SIGKILL);
      while (waitpid(z, nullptr, 0) < 0 && errno == EINTR) {
      }
      unregister_child(z);
    }
}

bool Launcher::start_zygote(std::string* error, bool python) {
  std::vector<std::string> argv = {worker_path_, "--zygote"};
  std::vector<std::string> env = scrubbed_env(options_);
  if (python) {
    if (!python_worker_command(worker_path_, &argv, error)) return false;
    argv.push_back("--zygote");
    add_python_worker_env(&env, worker_path_);  // scrubbed_env: the zygote never initializes CUDA or NVML
  }
  if (access(argv[0].c_str(), X_OK) != 0)
    return (*error = (python ? "Python interpreter" : "worker binary") + std::string(" not found or not executable: ") + argv[0], false);
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
    return (*error = std::string("socketpair: ") + strerror(errno), false);
  auto envp = cstrs(env);
  auto argvp = cstrs(argv);
  // The zygote asks for SIGKILL when its parent goes (PR_SET_PDEATHSIG), and the parent is the
  // *thread* that forked it: forked from a gate thread, it would die when that gate ends. So it
  // is forked from a thread that lives as long as this launcher.
  if (!keeper_) keeper_ = std::make_unique<ForkKeeper>();
  pid_t pid = keeper_->run([&]() -> pid_t {
    pid_t p = fork();
    if (p == 0) {
      // A group of its own: the terminal's Ctrl-C (SIGINT to the foreground group) is gauntlet's
      // to handle; it kills the zygote (interrupt.h), which must not die of it on its own first.
      setpgid(0, 0);
      dup2(sv[1], 3);  // dup2 clears close-on-exec on the new descriptor
      syscall(SYS_close_range, 4, ~0u, 0);
      execve(argvp[0], argvp.data(), envp.data());
      _exit(127);
    }
    return p < 0 ? -errno : p;  // errno is the keeper thread's
  });
  ::close(sv[1]);
  if (pid < 0) {
    errno = -pid;
    ::close(sv[0]);
    return (*error = std::string("fork: ") + strerror(errno), false);
  }
  (python ? py_zygote_pid_ : zygote_pid_) = pid;
  register_child(pid);
  const int sock = (python ? py_zygote_sock_ : zygote_sock_) = sv[0];
  pollfd pfd{sock, POLLIN, 0};
  char buf[64];
  ssize_t n = -1;
  // Importing torch takes seconds (4.4 s on the GPU host, more on a loaded CPU): a minute's grace.
  if (poll(&pfd, 1, python ? 120000 : 60000) == 1) n = recv(sock, buf, sizeof buf, 0);
  if (n != 4) return (*error = python ? "the Python zygote did not start (python3 without torch?)" : "the zygote did not start (worker binary broken?)", false);
  uint32_t threads = 0;
  memcpy(&threads, buf, 4);
  if (threads != 1)
    return (*error = "the zygote has " + std::to_string(threads) + " threads; forking it is unsafe", false);
  return true;
}

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

std::unique_ptr<WorkerSession> Launcher::spawn(std::string* error) {
  const auto called = std::chrono::steady_clock::now();
  struct TraceSpawn {  // the whole spawn as one interval of the timeline (common/trace.h)
    int64_t begin = monotonic_ns();
    ~TraceSpawn() { trace::interval("spawn", begin, monotonic_ns()); }
  } trace_spawn;
  std::lock_guard<std::recursive_mutex> lock(mu_);
  spawn_times_ = SpawnTimes{};
  spawn_times_.lock_wait = seconds_since(called);
  reap_exiting(false);
  if (python_) {  // Python modules: the Python zygote, else fork+exec (never the native zygote)
    if (options_.use_zygote && !py_zygote_failed_) {
      std::string why;
      const auto started = std::chrono::steady_clock::now();
      if (py_zygote_pid_ < 0 && !start_zygote(&why, true)) {
        py_zygote_failed_ = true;
        note_ = "fork+exec (Python zygote unavailable: " + why + ")";
      }
      spawn_times_.zygote_start = seconds_since(started);
      if (!py_zygote_failed_) return spawn_via_zygote(error, true);
    }
    return spawn_via_exec(error);
  }
  if (options_.use_zygote && !zygote_failed_) {
    if (zygote_pid_ < 0) {
      std::string why;
      const auto started = std::chrono::steady_clock::now();
      const bool ok = start_zygote(&why);
      spawn_times_.zygote_start = seconds_since(started);
      if (!ok) {
        zygote_failed_ = true;
        note_ = "fork+exec (zygote unavailable: " + why + ")";
      }
    }
    if (!zygote_failed_) return spawn_via_zygote(error);
  }
  return spawn_via_exec(error);
}

namespace {
struct ChildFds {
  int req[2] = {-1, -1}, rep[2] = {-1, -1}, status[2] = {-1, -1};
  int capture = -1;
  bool make(std::string* error) {
    if (pipe2(req, O_CLOEXEC) || pipe2(rep, O_CLOEXEC) || pipe2(status, O_CLOEXEC) ||
        (capture = make_capture_fd()) < 0) {
      *error = std::string("cannot create pipes: ") + strerror(errno);
      return false;
    }
    return true;
  }
  void close_child_ends() {
    for (int* fd : {&req[0], &rep[1], &status[1]})
      if (*fd >= 0) ::close(*fd), *fd = -1;
  }
  void close_all() {
    close_child_ends();
    for (int* fd : {&req[1], &rep[0], &status[0], &capture})
      if (*fd >= 0) ::close(*fd), *fd = -1;
  }
};
}  // namespace

std::unique_ptr<WorkerSession> Launcher::spawn_via_zygote(std::string* error, bool python) {
  const int zygote_sock = python ? py_zygote_sock_ : zygote_sock_;
  ChildFds fds;
  if (!fds.make(error)) return (fds.close_all(), nullptr);
  SandboxPolicy policy;
  policy.memory_limit_bytes = options_.memory_limit_bytes;
  policy.seccomp = options_.seccomp;
  wire::Writer w;
  w.u32(wanted_ns_);
  w.str(encode_policy(policy));
  int pass[4] = {fds.req[0], fds.rep[1], fds.capture, fds.status[1]};
  char cbuf[CMSG_SPACE(sizeof pass)] = {};
  iovec iov{w.bytes().data(), w.bytes().size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = cbuf;
  msg.msg_controllen = sizeof cbuf;
  cmsghdr* cm = CMSG_FIRSTHDR(&msg);
  cm->cmsg_level = SOL_SOCKET;
  cm->cmsg_type = SCM_RIGHTS;
  cm->cmsg_len = CMSG_LEN(sizeof pass);
  memcpy(CMSG_DATA(cm), pass, sizeof pass);
  pollfd pfd{zygote_sock, POLLIN, 0};
  char buf[64];
  ssize_t n = -1;
  const auto asked = std::chrono::steady_clock::now();
  if (sendmsg(zygote_sock, &msg, 0) >= 0 && poll(&pfd, 1, 30000) == 1)
    n = recv(zygote_sock, buf, sizeof buf, 0);
  spawn_times_.zygote = seconds_since(asked);
  fds.close_child_ends();
  if (n != 28) {
    fds.close_all();
    *error = "the zygote stopped answering";
    return nullptr;
  }
  std::string reply(buf, size_t(n));
  wire::Reader r(reply);
  int64_t pid = -1, err = 0;
  uint32_t achieved = 0;
  r.i64(&pid);
  r.u32(&achieved);
  r.i64(&err);
  int64_t clone_ns = 0;
  r.i64(&clone_ns);
  spawn_times_.clone = double(clone_ns) / 1e9;
  if (pid <= 0) {
    fds.close_all();
    *error = std::string("the zygote could not fork a child: ") + strerror(int(err));
    return nullptr;
  }
  last_achieved_ns_ = achieved;
  started_any_ = true;
  note_ = std::string(python ? "zygote (python module worker)" : "zygote") + "; namespaces=" + namespaces_to_string(achieved);
  if (achieved != wanted_ns_)
    note_ += " (wanted " + namespaces_to_string(wanted_ns_) + "; the host refused the rest)";
  register_child(pid_t(pid));
  ::close(fds.status[0]);  // the worker is our direct child: waitpid gives its status
  return adopt_child(pid_t(pid), achieved & kNsPid, fds.req[1], fds.rep[0], fds.capture);
}

std::unique_ptr<WorkerSession> Launcher::spawn_via_exec(std::string* error) {
  // Python modules: the interpreter runs the Python worker, with the same fds, policy and clone.
  std::vector<std::string> python_argv;
  if (python_) {
    if (!python_worker_command(worker_path_, &python_argv, error)) return nullptr;
  } else if (access(worker_path_.c_str(), X_OK) != 0) {
    *error = "worker binary not found or not executable: " + worker_path_;
    return nullptr;
  }
  // With an exec prefix (compute-sanitizer) that program is exec'd and starts the worker itself.
  const std::string exe = python_ ? python_argv[0] : options_.exec_prefix.empty() ? worker_path_ : options_.exec_prefix[0];
  if (access(exe.c_str(), X_OK) != 0) {
    *error = "not found or not executable: " + exe;
    return nullptr;
  }
  ChildFds fds;
  if (!fds.make(error)) return (fds.close_all(), nullptr);
  // Everything the child needs is prepared before clone: between clone and exec only
  // async-signal-safe calls are allowed (this process may have other threads).
  std::vector<std::string> env = scrubbed_env(options_);
  for (const std::string& extra : options_.extra_env) {  // an extra setting replaces one passed through
    const size_t eq = extra.find('=');
    const std::string name = eq == std::string::npos ? extra : extra.substr(0, eq + 1);
    env.erase(std::remove_if(env.begin(), env.end(), [&](const std::string& e) { return e.rfind(name, 0) == 0; }), env.end());
    env.push_back(extra);
  }
  if (python_) {
    add_python_worker_env(&env, worker_path_);
  }
  auto envp = cstrs(env);
  const uid_t uid = getuid();
  const gid_t gid = getgid();
  const std::string uid_map = "0 " + std::to_string(uid) + " 1\n";
  const std::string gid_map = "0 " + std::to_string(gid) + " 1\n";
  uint32_t bits = wanted_ns_;
  const uint32_t order[] = {kNsUser, kNsPid, kNsNet, kNsIpc, kNsMount};
  pid_t pid = -1;
  std::string policy_hex;
  std::vector<std::string> argv;
  std::vector<char*> argvp;
  for (int attempt = 0; attempt <= 5; ++attempt) {
    SandboxPolicy policy;
    policy.memory_limit_bytes = options_.memory_limit_bytes;
    policy.seccomp = options_.seccomp;
    policy.namespaces = bits;
    policy.drop_privileges = options_.drop_privileges;
    policy.tool_ipc = options_.tool_ipc;
    if (options_.tool_ipc) policy.private_tmp = false;  // the sanitizer front-end's files stay visible
    argv = options_.exec_prefix;
    for (const std::string& a : {worker_path_, std::string("--serve"), std::string("--policy"), encode_policy(policy)})
      argv.push_back(a);
    if (python_) {  // python3 gauntlet_pyworker.py --serve --policy HEX
      argv.erase(argv.begin(), argv.begin() + ptrdiff_t(options_.exec_prefix.size()) + 1);
      argv.insert(argv.begin(), python_argv.begin(), python_argv.end());
    }
    argvp = cstrs(argv);
    pid = pid_t(syscall(SYS_clone, clone_flags_for(bits) | SIGCHLD, nullptr, nullptr, nullptr, 0));
    if (pid == 0) {
      if (bits & kNsUser) {
        int f = ::open("/proc/self/setgroups", O_WRONLY);
        if (f >= 0) (void)!::write(f, "deny", 4), ::close(f);
        f = ::open("/proc/self/uid_map", O_WRONLY);
        if (f >= 0) (void)!::write(f, uid_map.data(), uid_map.size()), ::close(f);
        f = ::open("/proc/self/gid_map", O_WRONLY);
        if (f >= 0) (void)!::write(f, gid_map.data(), gid_map.size()), ::close(f);
      }
      int null_fd = ::open("/dev/null", O_RDONLY);
      int r = fcntl(fds.req[0], F_DUPFD, 100), p = fcntl(fds.rep[1], F_DUPFD, 100);
      int c = fcntl(fds.capture, F_DUPFD, 100), st = fcntl(fds.status[1], F_DUPFD, 100);
      dup2(null_fd, 0);
      dup2(c, 1);
      dup2(c, 2);
      dup2(r, 3);
      dup2(p, 4);
      dup2(st, 5);
      syscall(SYS_close_range, 6, ~0u, 0);
      setpgid(0, 0);
      execve(exe.c_str(), argvp.data(), envp.data());
      _exit(127);
    }
    if (pid > 0) break;
    if (errno != EPERM && errno != EINVAL && errno != ENOSPC && errno != EUSERS) break;
    if (attempt < 5) bits &= ~order[attempt];
  }
  fds.close_child_ends();
  if (pid < 0) {
    fds.close_all();
    *error = std::string("cannot start a worker: ") + strerror(errno);
    return nullptr;
  }
  register_child(pid);
  if (note_.empty() || note_.rfind("fork+exec", 0) != 0) note_ = "fork+exec";
  static const char* kPythonNote = "fork+exec (python module worker)";
  if (python_) note_ = kPythonNote;
  else if (note_ == kPythonNote || note_.rfind(std::string(kPythonNote) + ";", 0) == 0) note_ = "fork+exec";
  note_ = note_.substr(0, note_.find(';')) + "; namespaces=" + namespaces_to_string(bits);
  last_achieved_ns_ = bits;
  started_any_ = true;
  ::close(fds.status[0]);  // the worker is our direct child: waitpid gives its status
  return adopt_child(pid, bits & kNsPid, fds.req[1], fds.rep[0], fds.capture);
}

std::unique_ptr<WorkerSession> Launcher::adopt_child(pid_t pid, bool pid_ns, int req_fd, int rep_fd, int capture_fd) {
  std::unique_ptr<WorkerSession> s(new WorkerSession());
  s->launcher_ = this;
  s->pid_ = pid;
  s->pid_ns_ = pid_ns;
  s->req_fd_ = req_fd;
  s->rep_fd_ = rep_fd;
  s->capture_fd_ = capture_fd;
  s->timeout_seconds_ = options_.timeout_seconds;
  s->spawn_times_ = spawn_times_;
  s->started_ns_ = monotonic_ns();
  s->deadline_ms_ = wire::now_ms() + int64_t(options_.timeout_seconds) * 1000;
  return s;
}

void Launcher::reap_exiting(bool block) {
  std::vector<std::pair<pid_t, int64_t>> still;
  for (auto [pid, deadline] : exiting_) {
    while (true) {
      pid_t r = waitpid(pid, nullptr, WNOHANG);
      if (r == pid || (r < 0 && errno != EINTR)) {
        unregister_child(pid);
        break;
      }
      if (wire::now_ms() >= deadline) {
        kill(pid, SIGKILL);
        kill(-pid, SIGKILL);
        while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
        }
        unregister_child(pid);
        break;
      }
      if (!block) {
        still.push_back({pid, deadline});
        break;
      }
      usleep(500);
    }
  }
  exiting_ = std::move(still);
}

}  // namespace gauntlet
