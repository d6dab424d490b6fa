// Where the kernel builder's inputs live (the preludes, gauntlet's headers, torch, CUDA) and the
// compiler command a kernel is built with: src/build only.
#pragma once
#include <string>
#include <vector>

#include "gauntlet/build/builder.h"

namespace gauntlet::build_internal {

struct Layout {
  std::string prelude;       // light prelude directory
  std::string prelude_full;  // full prelude directory
  std::string include;       // gauntlet's include directory (kernel_adapter.h, kernel_abi.h)
};
Layout layout();

// What of torch goes into the keys: its include directories, its library and its version.h.
std::string torch_identity();

struct Toolchain {
  bool nvcc = false;
  std::string name;                   // the compiler as configured ("g++")
  std::vector<std::string> launcher;  // compiler command words, the first resolved to a path
  std::string identity;               // what of the compiler goes into the key
  std::vector<std::string> compile_flags;
  std::vector<std::string> link_flags;
};

// The compiler and flags for a request (nvcc for a .cu source); *error names a missing compiler.
Toolchain make_toolchain(const BuildRequest& req, const BuildConfig& cfg, bool nvcc, std::string* error);
// -I flags: the light or full prelude, gauntlet's include directory, torch's include directories.
std::vector<std::string> include_flags(const Layout& l, bool full);

}  // namespace gauntlet::build_internal
