// OpenMP's idle threads in the gauntlet process sleep instead of spinning (OMP_WAIT_POLICY=PASSIVE).
//
// The parent runs the fp64 oracles on LibTorch's OpenMP teams, one short parallel region after
// another; by default each idle thread spins after a region before it sleeps. Eight verify
// processes of four gates kept 3.4 of 16 cores busy that way on an H100, and a CUDA context costs
// the driver 67% more beside busy CPUs: with PASSIVE the parents used 1.0 core, a child's context
// cost the driver its floor (0.079 s against 0.077), and the batch ran 2,475 kernels an hour
// against 2,161 (docs/gpu.md, thirty-seventh session). The oracles' teams still run in parallel;
// they only wake slower between regions.
//
// libgomp reads the variable once, in its constructor, before main; and libc sets the environment
// up in its own constructor, so nothing set earlier survives. So without the variable the process
// executes itself again with it added, from the executable's .preinit_array: the loader runs that
// after mapping the libraries and before any constructor, so the second start skips LibTorch's
// static initialization the first would have done. Same pid, same arguments, the binary's own path
// (the process keeps its name).
#include <climits>
#include <cstring>
#include <unistd.h>

namespace {

constexpr char kPolicy[] = "OMP_WAIT_POLICY=";
constexpr char kPassive[] = "OMP_WAIT_POLICY=PASSIVE";
constexpr int kMaxEnvironment = 4096;  // larger environments run with the runtime's default

// No libc state is set up yet: only the arguments, plain memory and system calls.
void passive_openmp_unless_chosen(int, char** argv, char** envp) {
  int n = 0;
  for (; envp && envp[n]; ++n)
    if (std::strncmp(envp[n], kPolicy, sizeof kPolicy - 1) == 0 && envp[n][sizeof kPolicy - 1] != '\0')
      return;  // the caller's choice, or this is the second start
  if (n + 2 > kMaxEnvironment) return;
  static char* environment[kMaxEnvironment];
  int m = 0;
  for (int i = 0; i < n; ++i)
    if (std::strncmp(envp[i], kPolicy, sizeof kPolicy - 1) != 0) environment[m++] = envp[i];  // an empty one
  environment[m++] = const_cast<char*>(kPassive);
  environment[m] = nullptr;
  static char self[PATH_MAX];
  const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) return;
  self[len] = '\0';
  // Started through the loader itself (ld-linux... ./gauntlet): executing it again with these
  // arguments would run something else.
  const char* base = std::strrchr(self, '/');
  if (std::strncmp(base ? base + 1 : self, "ld-", 3) == 0) return;
  execve(self, argv, environment);  // returns only on failure: the run goes on with the default
}

}  // namespace

__attribute__((section(".preinit_array"), used)) static void (*const kPassiveOpenmp)(int, char**, char**) =
    &passive_openmp_unless_chosen;
