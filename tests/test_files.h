// Test helper: removes a directory tree with nftw (not std::filesystem::remove_all, see below).
#pragma once
#include <ftw.h>
#include <stdio.h>

#include <string>

namespace gauntlet::testing {

// On the GPU host the test binary's std::filesystem::remove_all binds to the copy PyTorch's
// libtorch.so exports, which called through a null pointer as soon as the tree held files
// (measured on the H200 with torch 2.11: SIGSEGV, pc 0, caller libtorch.so remove_all+0x92).
inline void remove_tree(const std::string& path) {
  nftw(
      path.c_str(), [](const char* p, const struct stat*, int, struct FTW*) { return ::remove(p); }, 16,
      FTW_DEPTH | FTW_PHYS);
}

}  // namespace gauntlet::testing
