// The zygote: loads LibTorch once, then forks one sandboxed child per (kernel, gate) on request.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <set>
#include <string>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include "gauntlet/common/monotonic_clock.h"
#include "gauntlet/common/wire.h"
#include "worker.h"

namespace gauntlet::worker {

constexpr int kStatusFd = 5;  // pid-namespace init reports the worker's wait status here

int count_threads() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++n;
    closedir(d);
  }
  return n;
}

// Runs as the child that owns the sandbox fds. As pid 1 of a new pid namespace, signals it sends
// itself (abort's SIGABRT, raise) would be ignored by the kernel, so reporters for them are
// installed first; faults (SIGSEGV, SIGBUS, ...) are forced and kill it as usual.
int run_child(SandboxPolicy policy) {
  ::close(kStatusFd);
  if (getpid() == 1) install_signal_reporters();
  return serve(policy);
}

// Moves the passed descriptors to their fixed numbers and closes everything else.
void arrange_fds(int req, int rep, int capture, int status) {
  int null_fd = ::open("/dev/null", O_RDONLY);
  // Park them high first so dup2 onto 3..5 cannot clobber one another.
  int r = fcntl(req, F_DUPFD, 100), p = fcntl(rep, F_DUPFD, 100);
  int c = fcntl(capture, F_DUPFD, 100), s = status >= 0 ? fcntl(status, F_DUPFD, 100) : -1;
  dup2(null_fd, 0);
  dup2(c, 1);
  dup2(c, 2);
  dup2(r, kRequestFd);
  dup2(p, kReplyFd);
  if (s >= 0) dup2(s, kStatusFd);
  syscall(SYS_close_range, s >= 0 ? 6 : 5, ~0u, 0);
}

namespace {

std::set<pid_t> g_children;

bool recv_spawn(int sock, uint32_t* ns_wanted, std::string* policy_hex, int fds[4]) {
  char buf[4096];
  char cbuf[CMSG_SPACE(sizeof(int) * 4)];
  iovec iov{buf, sizeof buf};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = cbuf;
  msg.msg_controllen = sizeof cbuf;
  ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  if (n <= 0) return false;
  cmsghdr* cm = CMSG_FIRSTHDR(&msg);
  if (!cm || cm->cmsg_type != SCM_RIGHTS || cm->cmsg_len != CMSG_LEN(sizeof(int) * 4)) return false;
  memcpy(fds, CMSG_DATA(cm), sizeof(int) * 4);
  std::string payload(buf, size_t(n));
  wire::Reader r(payload);
  return r.u32(ns_wanted) && r.str(policy_hex) && r.at_end();
}

// Clone with as many of the wanted namespaces as the host allows, dropping the ones refused.
pid_t clone_sandboxed(uint32_t wanted, uint32_t* achieved) {
  const uint32_t order[] = {kNsUser, kNsPid, kNsNet, kNsIpc, kNsMount};
  uint32_t bits = wanted;
  for (int attempt = 0; attempt <= 5; ++attempt) {
    pid_t pid = pid_t(syscall(SYS_clone, clone_flags_for(bits) | CLONE_PARENT | SIGCHLD, nullptr, nullptr, nullptr, 0));
    if (pid >= 0) {
      *achieved = bits;
      return pid;
    }
    if (errno != EPERM && errno != EINVAL && errno != ENOSPC && errno != EUSERS) return -1;
    if (attempt < 5) bits &= ~order[attempt];
  }
  return -1;
}

void write_id_maps(uid_t uid, gid_t gid) {
  auto put = [](const char* path, const std::string& text) {
    int fd = ::open(path, O_WRONLY);
    if (fd >= 0) {
      ssize_t ignored = ::write(fd, text.data(), text.size());
      (void)ignored;
      ::close(fd);
    }
  };
  put("/proc/self/setgroups", "deny");
  put("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1\n");
  put("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1\n");
}

}  // namespace

// Pays LibTorch's lazy first-use costs (dispatcher caches, allocator, dtype conversions) once
// here instead of in every child. Tiny tensors and one intra-op thread keep the zygote
// single-threaded, which the hello message proves to the parent.
void warm_up() {
  at::set_num_threads(1);
  at::Tensor a = at::ones({4, 4}, at::kFloat);
  at::Tensor b = a.t().contiguous().clone();
  at::Tensor c = (a + b).to(at::kHalf).to(at::kBFloat16).to(at::kDouble).cpu();
  at::Tensor d = c.as_strided({2, 2}, {1, 2}, 1).contiguous();
  at::Tensor e = at::empty({8}, at::kLong);
  (void)d.sum().item<double>();
  (void)e.numel();
}

int zygote_main() {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  warm_up();
  const int sock = kControlFd;
  // Children forked from a multithreaded process can deadlock; tell the parent to fall back.
  wire::Writer hello;
  hello.u32(uint32_t(count_threads()));
  if (send(sock, hello.bytes().data(), hello.bytes().size(), 0) < 0) return 3;
  signal(SIGPIPE, SIG_IGN);
  while (true) {
    uint32_t wanted = 0;
    std::string policy_hex;
    int fds[4] = {-1, -1, -1, -1};
    if (!recv_spawn(sock, &wanted, &policy_hex, fds)) break;
    SandboxPolicy policy;
    int32_t result_pid = -1, err = 0;
    uint32_t achieved = 0;
    int64_t clone_ns = 0;  // the clone itself: copying the zygote's mappings, making the namespaces
    if (decode_policy(policy_hex, &policy)) {
      const uid_t uid = getuid();
      const gid_t gid = getgid();
      // CLONE_PARENT makes the child gauntlet's own child (one fork, no intermediate), so
      // gauntlet waits for it and kills it directly.
      const pid_t gauntlet_pid = getppid();
      const int64_t clone_start_ns = monotonic_ns();
      pid_t c = clone_sandboxed(wanted, &achieved);
      if (c == 0) {
        // Its parent is gauntlet's thread that forked this zygote (CLONE_PARENT): when gauntlet
        // goes, interrupted or killed, so does the child. Gone already: go now (in a new pid
        // namespace getppid() is 0 and cannot tell; the zygote's own kill covers that).
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != 0 && getppid() != gauntlet_pid) _exit(1);
        if (achieved & kNsUser) write_id_maps(uid, gid);
        arrange_fds(fds[0], fds[1], fds[2], (achieved & kNsPid) ? fds[3] : -1);
        setpgid(0, 0);
        policy.namespaces = achieved;
        _exit(run_child(policy));
      }
      result_pid = c;
      err = c < 0 ? errno : 0;
      clone_ns = monotonic_ns() - clone_start_ns;
      if (result_pid > 0) g_children.insert(result_pid);
    } else {
      err = EINVAL;
    }
    for (int fd : fds)
      if (fd >= 0) ::close(fd);
    wire::Writer w;
    w.i64(result_pid);
    w.u32(achieved);
    w.i64(err);
    w.i64(clone_ns);
    if (send(sock, w.bytes().data(), w.bytes().size(), 0) < 0) break;
  }
  // The parent went away: take every child we started with us.
  for (pid_t p : g_children) kill(p, SIGKILL);
  return 0;
}

}  // namespace gauntlet::worker
