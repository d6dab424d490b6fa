// A fault in gauntlet itself (never the kernel's: kernels run in children) prints a backtrace.
#include "crash_report.h"

#include <execinfo.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

namespace gauntlet {
namespace {

void write_str(const char* s) { (void)!::write(2, s, strlen(s)); }

// Only async-signal-safe calls here; backtrace() is called once at install time so that its
// lazy loading of libgcc does not happen inside the handler.
void on_fault(int sig) {
  write_str("\ngauntlet: internal error: ");
  write_str(strsignal(sig));
  write_str(" in gauntlet itself (a harness bug; kernels run in sandboxed children). Backtrace:\n");
  void* frames[64];
  const int n = backtrace(frames, 64);
  backtrace_symbols_fd(frames, n, 2);
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace

void install_crash_report() {
  void* warm[1];
  backtrace(warm, 1);
  static char stack[64 * 1024];  // a stack overflow must still be reported
  stack_t ss{};
  ss.ss_sp = stack;
  ss.ss_size = sizeof stack;
  sigaltstack(&ss, nullptr);
  struct sigaction sa {};
  sa.sa_handler = on_fault;
  sa.sa_flags = SA_ONSTACK | SA_RESETHAND;
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) sigaction(sig, &sa, nullptr);
}

}  // namespace gauntlet
