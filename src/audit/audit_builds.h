// The audit's build-ahead lane (audit_builds.cpp).
#pragma once

#include <sys/types.h>

#include <vector>

#include "gauntlet/schema/manifest.h"
#include "gauntlet/sandbox/sandbox.h"

namespace gauntlet {

// Forks a process that runs the build step of each Python module in `modules` (module_build.h),
// `build_jobs` at a time, in corpus order; returns its pid (0: nothing to build, or no fork).
// The process dies with its parent.
pid_t start_build_ahead(const std::vector<KernelManifest>& modules, const SandboxOptions& sandbox, int build_jobs);

}  // namespace gauntlet
