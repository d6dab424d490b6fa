// OpenMP's idle threads in the gauntlet process sleep instead of spinning (OMP_WAIT_POLICY=PASSIVE).
//
// The parent runs the fp64 oracles on LibTorch's OpenMP teams, one short parallel region after
// another; by default each idle thread spins after a region before it sleeps. Eight verify
// processes of four gates kept 3.4 of 16 cores busy that way on an H100, and a CUDA context costs
// the driver 67% more beside busy CPUs: with PASSIVE the parents used 1.0 core, a child's context
// cost the driver its floor (0.079 s against 0.077), and the batch ran 2,475 kernels an hour
// against 2,161 (docs/gpu.md, thirty-seventh session). The oracles' own time is unchanged: their
// teams still run in parallel, they only wake slower between regions.
#include "passive_openmp.h"

#include <cstdlib>
#include <unistd.h>

namespace gauntlet {

void reexec_with_passive_openmp(char** argv) {
  if (const char* v = std::getenv("OMP_WAIT_POLICY"); v && *v) return;  // the caller's choice, or done
  if (setenv("OMP_WAIT_POLICY", "PASSIVE", 1) != 0) return;
  execv("/proc/self/exe", argv);
  // No /proc (or no exec): the run goes on with the runtime's default; the report says which.
  unsetenv("OMP_WAIT_POLICY");
}

}  // namespace gauntlet
