// SIGINT/SIGTERM/SIGHUP handling: a registry of started children that a signal handler can kill.
#include "gauntlet/common/interrupt.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>

namespace gauntlet {
namespace {

constexpr int kSlots = 4096;  // gate children, zygotes, compilers: far more than ever run at once
std::atomic<pid_t> g_children[kSlots];
std::atomic<bool> g_interrupted{false};
// The line written on an interrupt, prepared outside the handler (no allocation inside it).
char g_line[512];
size_t g_line_len = 0, g_sig_at = size_t(-1);

void write_all(const char* s, size_t n) {
  while (n > 0) {
    const ssize_t k = ::write(2, s, n);
    if (k <= 0) return;
    s += k;
    n -= size_t(k);
  }
}

void on_interrupt(int sig) {
  g_interrupted.store(true);
  kill_registered_children();
  if (g_line_len > 0) {
    const char* name = signal_name(sig);
    if (g_sig_at == size_t(-1)) {
      write_all(g_line, g_line_len);
    } else {
      write_all(g_line, g_sig_at);
      write_all(name, strlen(name));
      write_all(g_line + g_sig_at + 2, g_line_len - g_sig_at - 2);
    }
  }
  _exit(interrupted_exit_status(sig));
}

}  // namespace

void register_child(pid_t pid) {
  if (pid <= 0) return;
  for (auto& slot : g_children) {
    pid_t empty = 0;
    if (slot.compare_exchange_strong(empty, pid)) return;
  }
}

void unregister_child(pid_t pid) {
  if (pid <= 0) return;
  for (auto& slot : g_children) {
    pid_t p = pid;
    if (slot.compare_exchange_strong(p, 0)) return;
  }
}

void kill_registered_children() {
  for (auto& slot : g_children) {
    const pid_t p = slot.load();
    if (p > 0) {
      kill(-p, SIGKILL);  // its process group: whatever the child started
      kill(p, SIGKILL);
    }
  }
}

bool interrupt_requested() { return g_interrupted.load(); }

const char* signal_name(int sig) {
  return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP" : "a signal";
}

void wait_for_interrupt_exit() {
  for (;;) pause();
}

void install_interrupt_exit(const std::string& line) {
  g_line_len = std::min(line.size(), sizeof g_line);
  memcpy(g_line, line.data(), g_line_len);
  const size_t at = line.find("%s");
  g_sig_at = at != std::string::npos && at + 2 <= g_line_len ? at : size_t(-1);
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sigaddset(&sa.sa_mask, SIGINT);  // the other one, arriving meanwhile, waits: the handler exits
  sigaddset(&sa.sa_mask, SIGTERM);
  sigaddset(&sa.sa_mask, SIGHUP);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
  sigset_t both;
  sigemptyset(&both);
  sigaddset(&both, SIGINT);
  sigaddset(&both, SIGTERM);
  sigaddset(&both, SIGHUP);
  pthread_sigmask(SIG_UNBLOCK, &both, nullptr);
}

}  // namespace gauntlet
