// Reading a compiler's output (run_process itself is declared in build_cache.h): src/build only.
#pragma once
#include <string>

#include "gauntlet/build/build_cache.h"

namespace gauntlet::build_internal {

// The generated wrapper unit's name (its errors and the linker's are the build's own, not the kernel's).
inline constexpr const char* kWrapperName = "gauntlet_wrapper";

bool proc_ok(const ProcResult& r);  // spawned, in time, exit 0
// The first line that reports an error, or a short description of how the process ended.
std::string first_error_line(const std::string& output);
// The first lines of a failed build's log, for the error message.
std::string error_log_head(const std::string& output);
// Did the light prelude fail for want of a declaration the full torch/torch.h may provide?
bool worth_full_retry(const std::string& output);
// Deterministic given the cache key (so worth caching): a plain compile error, not the machine's.
bool failure_is_deterministic(const ProcResult& r);

}  // namespace gauntlet::build_internal
