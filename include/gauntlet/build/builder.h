// Builds native kernel sources (.cpp with g++, .cu with nvcc) into shared objects, cached by content.
#pragma once
#include <string>
#include <vector>

#include "gauntlet/common/digest.h"  // sha256_hex, which the build's keys and hashes use

namespace gauntlet {

struct BuildRequest {
  std::string source_path;           // absolute or relative path of the .cpp / .cu file
  std::vector<std::string> entries;  // entry function names to export ("forward", maybe "backward")
  std::string device = "cpu";        // "cpu" or "cuda"
  bool address_sanitizer = false;    // an ASan build (memory gate)
};

struct BuildResult {
  bool ok = false;
  std::string so_path;        // the cached shared object (valid when ok)
  std::string source_hash;    // sha256 hex of the source bytes: the SPEC's "kernel hash"
  std::string cache_key;      // sha256 hex over source, entries, toolchain, flags, prelude version
  bool cache_hit = false;
  double seconds = 0.0;       // wall time of this call
  std::string prelude;        // "light" (ATen + torch/types.h) or "full" (torch/torch.h)
  std::string error;          // one line: why it failed (missing file, compiler error, ...)
  std::string log_head;       // the compiler's first error lines (build-error evidence)
  // A Python module's build directory (module_build.h): what its gate children load; "" for none.
  std::string module_dir;
  bool harness_fault = false;  // not ok because gauntlet failed, not the kernel (harness-error)
  bool timed_out = false;      // a Python module's import and build ran past --build-timeout (timeout)
};

struct BuildConfig {
  std::string cache_dir;      // default: $GAUNTLET_CACHE or $XDG_CACHE_HOME/gauntlet or ~/.cache/gauntlet
  std::string cxx = "g++";    // host compiler
  std::string nvcc = "nvcc";  // CUDA compiler (cuda device)
  int timeout_seconds = 600;  // a compiler that runs longer is killed: build-error
  bool verbose = false;
};

// Default config from the environment (GAUNTLET_CACHE, CXX, NVCC).
BuildConfig default_build_config();

// Builds (or finds in the cache) the kernel. Never throws.
BuildResult build_kernel(const BuildRequest& request, const BuildConfig& config);


}  // namespace gauntlet
