// Test-binary environment: points gauntlet at this build's worker, schemas and kernel cache, whether
// or not ctest passed the variables (an explicit environment still wins); a crash prints its stack.
#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace {

// A test binary that dies of SIGSEGV/SIGBUS/SIGABRT says where (raw frames; addr2line or
// c++filt turn them into lines), then dies of the same signal.
void print_stack_and_die(int sig) {
  const char* head = "\n*** test binary: fatal signal, stack:\n";
  if (write(2, head, std::strlen(head)) < 0) {}
  void* frames[64];
  const int n = backtrace(frames, 64);
  backtrace_symbols_fd(frames, n, 2);
  signal(sig, SIG_DFL);
  raise(sig);
}

struct TestEnvironment {
  TestEnvironment() {
    setenv("GAUNTLET_WORKER", GAUNTLET_TEST_WORKER, 0);
    setenv("GAUNTLET_SCHEMAS", GAUNTLET_SOURCE_DIR "/opschemas", 0);
    setenv("GAUNTLET_CACHE", GAUNTLET_TEST_CACHE, 0);
    for (int sig : {SIGSEGV, SIGBUS, SIGABRT}) signal(sig, print_stack_and_die);
  }
} test_environment;

}  // namespace
