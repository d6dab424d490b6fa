// Test-binary environment: points gauntlet at this build's worker, schemas and kernel cache, whether
// or not ctest passed the variables (an explicit environment still wins); a crash prints where.
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

void say(const char* s) {
  if (write(2, s, std::strlen(s)) < 0) {}
}

void name_address(const char* what, void* addr) {
  char line[512];
  Dl_info info{};
  if (addr && dladdr(addr, &info) && info.dli_fname)
    std::snprintf(line, sizeof line, "  %s %p = %s(%s+%#lx)\n", what, addr, info.dli_fname,
                  info.dli_sname ? info.dli_sname : "?",
                  (unsigned long)((char*)addr - (char*)(info.dli_sname ? info.dli_saddr : info.dli_fbase)));
  else
    std::snprintf(line, sizeof line, "  %s %p\n", what, addr);
  say(line);
}

// A test binary that dies of SIGSEGV/SIGBUS/SIGABRT says where (the faulting instruction, the
// word on top of the stack, which is the caller when the crash is a call through a null
// pointer, and the raw frames), then dies of the same signal.
void print_stack_and_die(int sig, siginfo_t* info, void* context) {
  say("\n*** test binary: fatal signal\n");
  name_address("fault address", info ? info->si_addr : nullptr);
#if defined(__x86_64__)
  if (auto* uc = static_cast<ucontext_t*>(context)) {
    void* pc = reinterpret_cast<void*>(uc->uc_mcontext.gregs[REG_RIP]);
    void** sp = reinterpret_cast<void**>(uc->uc_mcontext.gregs[REG_RSP]);
    name_address("pc", pc);
    if (sp) name_address("[sp]", *sp);
  }
#endif
  void* frames[64];
  const int n = backtrace(frames, 64);
  for (int i = 0; i < n; ++i) name_address("frame", frames[i]);
  signal(sig, SIG_DFL);
  raise(sig);
}

struct TestEnvironment {
  TestEnvironment() {
    setenv("GAUNTLET_WORKER", GAUNTLET_TEST_WORKER, 0);
    setenv("GAUNTLET_SCHEMAS", GAUNTLET_SOURCE_DIR "/opschemas", 0);
    setenv("GAUNTLET_CACHE", GAUNTLET_TEST_CACHE, 0);
    struct sigaction sa {};
    sa.sa_sigaction = print_stack_and_die;
    sa.sa_flags = SA_SIGINFO;
    for (int sig : {SIGSEGV, SIGBUS, SIGABRT}) sigaction(sig, &sa, nullptr);
  }
} test_environment;

}  // namespace
