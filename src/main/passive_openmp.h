// OpenMP's idle threads in the gauntlet process sleep instead of spinning (OMP_WAIT_POLICY=PASSIVE).
#pragma once

namespace gauntlet {
// Without OMP_WAIT_POLICY in the environment: sets it to PASSIVE and executes this binary again
// with the same arguments. The OpenMP runtime reads it once, when it loads, before main, so a
// setenv alone comes too late. Returns only when there is nothing to do or the exec failed (the
// run goes on as it would have).
void reexec_with_passive_openmp(char** argv);
}  // namespace gauntlet
