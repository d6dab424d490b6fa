// Entering the sandbox inside a worker child: private /tmp, privilege drop, rlimits, seccomp filter.
#include <dirent.h>
#include <sched.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <seccomp.h>
#include <signal.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <string>

#include "gauntlet/sandbox/device_nodes.h"
#include "gauntlet/sandbox/fs_lockdown.h"
#include "gauntlet/common/wire.h"
#include "worker.h"

namespace gauntlet::worker {
namespace {

// Reports a trapped forbidden system call as a Violation frame, then dies. Async-signal-safe:
// builds the frame by hand in a stack buffer (same layout as wire::write_frame).
void write_small_frame(wire::FrameType type, uint64_t value);

void on_sigsys(int, siginfo_t* info, void*) {
  write_small_frame(wire::FrameType::Violation, uint64_t(int64_t(info->si_syscall)));
  _exit(101);
}

// Writes an 8-byte-payload frame by hand (async-signal-safe; same layout as wire::write_frame).
void write_small_frame(wire::FrameType type, uint64_t value) {
  unsigned char buf[16 + 8 + 8];
  auto put = [&](int at, uint64_t v, int n) {
    for (int i = 0; i < n; ++i) buf[at + i] = (unsigned char)(v >> (8 * i));
  };
  put(0, wire::kMagic, 4);
  put(4, uint32_t(type), 4);
  put(8, 8, 8);
  put(16, value, 8);
  uint64_t h = 1469598103934665603ull;
  for (int i = 16; i < 24; ++i) h = (h ^ buf[i]) * 1099511628211ull;
  put(24, h, 8);
  ssize_t ignored = ::write(kReplyFd, buf, sizeof buf);
  (void)ignored;
}

void on_fatal_signal(int sig) {
  write_small_frame(wire::FrameType::Signal, uint64_t(sig));
  _exit(128 + sig);
}

// tool_ipc (the compute-sanitizer child, cuda only): Unix sockets of any type may be made and
// connected, bound, listened on and accepted, so the sanitizer's injected library reaches its
// front-end process; other socket families still trap, the network namespace stays.
bool install_seccomp(std::string* error, bool cuda, bool tool_ipc = false) {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx) return (*error = "seccomp_init failed", false);
  const uint32_t trap = SCMP_ACT_TRAP;
  // Network, process creation and execution, tracing, namespace and mount changes.
  const int trapped[] = {SCMP_SYS(socket),   SCMP_SYS(socketpair),    SCMP_SYS(connect),
                         SCMP_SYS(bind),     SCMP_SYS(listen),        SCMP_SYS(accept),
                         SCMP_SYS(accept4),  SCMP_SYS(execve),        SCMP_SYS(execveat),
                         SCMP_SYS(fork),     SCMP_SYS(vfork),         SCMP_SYS(ptrace),
                         SCMP_SYS(process_vm_readv), SCMP_SYS(process_vm_writev),
                         SCMP_SYS(mount),    SCMP_SYS(umount2),       SCMP_SYS(unshare),
                         SCMP_SYS(setns),    SCMP_SYS(chroot),        SCMP_SYS(pivot_root),
                         SCMP_SYS(bpf),      SCMP_SYS(perf_event_open), SCMP_SYS(keyctl),
                         SCMP_SYS(add_key),  SCMP_SYS(request_key),   SCMP_SYS(io_uring_setup),
                         SCMP_SYS(kexec_load), SCMP_SYS(init_module), SCMP_SYS(finit_module)};
  int rc = 0;
  tool_ipc = tool_ipc && cuda;
  for (int sc : trapped) {
    if (tool_ipc && (sc == SCMP_SYS(socket) || sc == SCMP_SYS(connect) || sc == SCMP_SYS(bind) ||
                     sc == SCMP_SYS(listen) || sc == SCMP_SYS(accept) || sc == SCMP_SYS(accept4)))
      continue;  // below
    if (cuda && (sc == SCMP_SYS(socket) || sc == SCMP_SYS(connect) || sc == SCMP_SYS(bind) || sc == SCMP_SYS(listen)))
      continue;  // below
    rc |= seccomp_rule_add(ctx, trap, sc, 0);
  }
  if (tool_ipc) {
    rc |= seccomp_rule_add(ctx, trap, SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_NE, AF_UNIX));
  } else if (cuda) {
    // The CUDA driver's start probes for an MPS server: socket(AF_UNIX, SOCK_SEQPACKET), then
    // connect("/tmp/nvidia-mps/control"), carrying on when that gives ENOENT; a refused socket()
    // makes it fail (error 304, seen on the H200). So a CUDA child may make that one kind of
    // socket, every connect() answers ENOENT, and nothing else changes: other families and
    // types trap (no datagram socket that could sendto() a path), as do accept and socketpair.
    // Connection-oriented and never connected, the socket reaches nobody.
    rc |= seccomp_rule_add(ctx, trap, SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_NE, AF_UNIX));
    for (int type : {SOCK_STREAM, SOCK_DGRAM, SOCK_RAW, SOCK_RDM, SOCK_PACKET})
      rc |= seccomp_rule_add(ctx, trap, SCMP_SYS(socket), 1, SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, scmp_datum_t(type)));
    rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOENT), SCMP_SYS(connect), 0);
    // The driver also binds (and may listen on) its own Unix socket (seen on the H200). Allowed:
    // the child has its own network namespace (abstract names are private to it) and a private
    // /tmp, and since every connect() fails nothing can reach a socket in either direction.

  }
  // clone without CLONE_THREAD makes a process; threads (CLONE_THREAD) stay allowed.
  rc |= seccomp_rule_add(ctx, trap, SCMP_SYS(clone), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
  // clone3's flags live in memory the filter cannot read: refuse it so libc falls back to clone.
  rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
  // Signals only to itself: without a pid namespace, other sandboxed children run under the same
  // uid, and a kernel must not be able to kill them (abort() uses tgkill on itself, still allowed).
  const scmp_datum_t self = scmp_datum_t(getpid());
  rc |= seccomp_rule_add(ctx, trap, SCMP_SYS(kill), 1, SCMP_A0(SCMP_CMP_NE, self));
  rc |= seccomp_rule_add(ctx, trap, SCMP_SYS(tgkill), 1, SCMP_A0(SCMP_CMP_NE, self));
  rc |= seccomp_rule_add(ctx, trap, SCMP_SYS(rt_sigqueueinfo), 1, SCMP_A0(SCMP_CMP_NE, self));
  rc |= seccomp_rule_add(ctx, trap, SCMP_SYS(rt_tgsigqueueinfo), 1, SCMP_A0(SCMP_CMP_NE, self));
  for (int sc : {SCMP_SYS(tkill), SCMP_SYS(pidfd_open), SCMP_SYS(pidfd_send_signal), SCMP_SYS(pidfd_getfd)})
    rc |= seccomp_rule_add(ctx, trap, sc, 0);
  // A kernel must not replace the SIGSYS reporter.
  rc |= seccomp_rule_add(ctx, SCMP_ACT_KILL_PROCESS, SCMP_SYS(rt_sigaction), 1,
                         SCMP_A0(SCMP_CMP_EQ, SIGSYS));
  if (rc != 0) {
    seccomp_release(ctx);
    return (*error = "seccomp rule setup failed", false);
  }
  rc = seccomp_load(ctx);
  seccomp_release(ctx);
  if (rc != 0) return (*error = std::string("seccomp_load failed: ") + strerror(-rc), false);
  return true;
}

// Copies an already-open file (the kernel may live under the /tmp we are about to hide).
bool copy_file(int in, const std::string& to) {
  if (in < 0) return false;
  struct stat st {};
  fstat(in, &st);
  int out = ::open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
  if (out < 0) {
    ::close(in);
    return false;
  }
  off_t off = 0;
  bool ok = true;
  while (off < st.st_size) {
    ssize_t k = sendfile(out, in, &off, size_t(st.st_size - off));
    if (k <= 0) {
      ok = false;
      break;
    }
  }
  ::close(in);
  ::close(out);
  return ok;
}

std::vector<std::string> world_writable_dirs_but_tmp() {
  std::vector<std::string> d;
  for (const std::string& w : world_writable_dirs())
    if (w != "/tmp") d.push_back(w);  // already the child's private /tmp
  return d;
}

}  // namespace

void install_signal_reporters() {
  for (int sig : {SIGABRT, SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM}) {
    struct sigaction sa {};
    sa.sa_handler = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, nullptr);
  }
}

bool enter_sandbox(const SandboxPolicy& policy, std::string* so_path, std::string* notes,
                   std::string* error, bool cuda) {
  std::string layers = "isolation:";
  // Open the kernel while we still can: the cache may live under the /tmp about to be hidden, or
  // in a directory the unprivileged uid cannot enter.
  int kernel_fd = so_path->empty() ? -1 : ::open(so_path->c_str(), O_RDONLY | O_CLOEXEC);
  if (!so_path->empty() && kernel_fd < 0)
    return (*error = "cannot open the kernel " + *so_path + ": " + strerror(errno), false);
  bool private_tmp = false;
  if ((policy.namespaces & kNsMount) && policy.private_tmp) {
    // Keep our mounts from propagating back, then give the child its own empty /tmp.
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 &&
        mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=256m,mode=1777") == 0) {
      private_tmp = true;
      layers += " private-tmp";
    } else {
      layers += " private-tmp=unavailable(" + std::string(strerror(errno)) + ")";
    }
  }
  if (cuda && (policy.namespaces & kNsPid) && (policy.namespaces & kNsMount)) {
    // The CUDA driver needs /proc to match the pid namespace it runs in (else cudaGetDeviceCount
    // fails with error 304). Mounts stay private to this namespace (made so above, or here).
    if (!private_tmp) mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr);
    if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) == 0) {
      layers += " private-proc";
    } else {
      layers += " private-proc=unavailable(" + std::string(strerror(errno)) + ")";
    }
  }
  if (!cuda) {
    // SPEC: GPU device nodes only where the gate needs the GPU. A CPU kernel's child gets
    // /dev/null over every /dev/nvidia* node (and an empty tmpfs over the nvidia-caps folders), so
    // it cannot open the GPU. Nothing is noted where no such node exists (a machine without GPU).
    std::string why;
    bool any = false;
    if (DIR* d = opendir("/dev")) {
      while (dirent* e = readdir(d)) any |= is_gpu_device_name(e->d_name);
      closedir(d);
    }
    if (any && (policy.namespaces & kNsMount)) {
      if (!private_tmp) mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr);
      const int n = hide_gpu_device_nodes("/dev", &why);
      layers += why.empty() ? " gpu-hidden(" + std::to_string(n) + ")" : " gpu-hidden=partial(" + why + ")";
    } else if (any) {
      layers += " gpu-visible(no mount namespace)";
    }
  }
  // Nothing a child writes may reach a later child (its own next gate, or another kernel's): every
  // mount read-only, a fresh tmpfs over every other world-writable place. After the /proc and GPU
  // node mounts, which the read-only pass keeps as they are.
  if (private_tmp) {
    layers += " " + lock_down_filesystem(world_writable_dirs_but_tmp(), {"/tmp"});
  } else if ((policy.namespaces & kNsMount) && !policy.private_tmp) {
    // The compute-sanitizer child shares its mount namespace with the tool's front-end, which
    // talks to it through /tmp and /dev/shm: this child locks down in a namespace of its own and
    // keeps the host's /tmp and /dev/shm (docs/gpu.md, "Sandbox").
    if (unshare(CLONE_NEWNS) == 0 && mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0)
      layers += " " + lock_down_filesystem({"/var/tmp", "/run/lock"}, {"/tmp", "/dev/shm"}) +
                " shared-tmp,shm(compute-sanitizer)";
    else
      layers += " fs-writable(" + std::string(strerror(errno)) + ")";
  } else {
    layers += (policy.namespaces & kNsMount) ? " fs-writable(no private /tmp)" : " fs-writable(no mount namespace)";
  }
  if (kernel_fd >= 0) {
    if (private_tmp) {
      const std::string local = "/tmp/gauntlet-kernel.so";
      if (!copy_file(kernel_fd, local)) return (*error = "cannot copy the kernel into the sandbox /tmp", false);
      *so_path = local;
    } else {
      // Load through the open descriptor: no path access is needed after the privilege drop.
      const int fd = fcntl(kernel_fd, F_DUPFD, 10);  // without close-on-exec, dlopen re-opens it
      ::close(kernel_fd);
      *so_path = "/proc/self/fd/" + std::to_string(fd);
    }
  }
  if (policy.drop_privileges && geteuid() == 0 && !(policy.namespaces & kNsUser)) {
    // Root outside a user namespace: become nobody so the kernel owns nothing. The kernel clears
    // the parent-death signal on a change of credentials, and this child (PID 1 of its namespace,
    // deaf to SIGTERM) would then outlive a killed gauntlet: the signal it had is asked for again.
    int death_signal = 0;
    prctl(PR_GET_PDEATHSIG, &death_signal);
    if (setgroups(0, nullptr) != 0 || setresgid(65534, 65534, 65534) != 0 ||
        setresuid(65534, 65534, 65534) != 0)
      return (*error = std::string("cannot drop privileges: ") + strerror(errno), false);
    if (death_signal != 0) prctl(PR_SET_PDEATHSIG, death_signal);
    layers += " uid=nobody";
  }
  auto limit = [](int res, int64_t v) {
    rlimit rl{rlim_t(v), rlim_t(v)};
    return setrlimit(res, &rl) == 0;
  };
  bool rl_ok = limit(RLIMIT_CORE, 0) && limit(RLIMIT_FSIZE, policy.file_size_bytes) &&
               limit(RLIMIT_NOFILE, 256);
  if (policy.memory_limit_bytes > 0) rl_ok = rl_ok && limit(RLIMIT_DATA, policy.memory_limit_bytes);
  if (policy.cpu_seconds > 0) rl_ok = rl_ok && limit(RLIMIT_CPU, policy.cpu_seconds);
  if (!rl_ok) return (*error = std::string("setrlimit failed: ") + strerror(errno), false);
  layers += " rlimits";
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return (*error = "PR_SET_NO_NEW_PRIVS failed", false);
  if (policy.seccomp) {
    struct sigaction sa {};
    sa.sa_sigaction = on_sigsys;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSYS, &sa, nullptr);
    if (!install_seccomp(error, cuda, policy.tool_ipc)) return false;
    layers += cuda && policy.tool_ipc ? " seccomp(unix-sockets-for-compute-sanitizer)" : " seccomp";
  }
  *notes = layers;
  return true;
}

}  // namespace gauntlet::worker
