// The kernel's function symbols found for preloading (kernel_preload.h): read from an ELF file's
// symbol tables as offsets from its load base, checked against this test binary's own functions.
#include "../../src/worker/kernel_preload.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <link.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>

extern "C" __attribute__((noinline, used)) int gauntlet_preload_probe_function(int x) { return x * 3 + 1; }

namespace gauntlet::worker {
namespace {

// This executable's load base (the first object dl_iterate_phdr reports).
unsigned long own_load_base() {
  unsigned long base = 0;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        *static_cast<unsigned long*>(data) = info->dlpi_addr;
        return 1;
      },
      &base);
  return base;
}

TEST(KernelPreload, FunctionSymbolsAreReadAsOffsetsFromTheLoadBase) {
  std::string why;
  const std::vector<unsigned long> offsets = elf_function_offsets("/proc/self/exe", &why);
  ASSERT_FALSE(offsets.empty()) << why;
  EXPECT_TRUE(std::is_sorted(offsets.begin(), offsets.end()));
  EXPECT_EQ(std::adjacent_find(offsets.begin(), offsets.end()), offsets.end()) << "each symbol once";
  const unsigned long probe = reinterpret_cast<unsigned long>(&gauntlet_preload_probe_function) - own_load_base();
  EXPECT_TRUE(std::binary_search(offsets.begin(), offsets.end(), probe)) << "the probe function's offset is missing";
  EXPECT_EQ(gauntlet_preload_probe_function(2), 7);
}

TEST(KernelPreload, AFileThatIsNotAnElfObjectGivesNothingAndSaysWhy) {
  const std::string path = "/tmp/gauntlet-preload-test-" + std::to_string(getpid()) + ".txt";
  std::ofstream(path) << "not an object file\n";
  std::string why;
  EXPECT_TRUE(elf_function_offsets(path, &why).empty());
  EXPECT_NE(why.find("ELF"), std::string::npos) << why;
  why.clear();
  EXPECT_TRUE(elf_function_offsets("/nonexistent/kernel.so", &why).empty());
  EXPECT_FALSE(why.empty());
  ::unlink(path.c_str());
}

// Without a CUDA runtime in the process (this test, a CPU host) every symbol is tried and none is a
// kernel; the measurement switch skips the whole step.
TEST(KernelPreload, WithoutACudaRuntimeNoSymbolIsAKernelAndTheSwitchSkipsIt) {
  void* self = dlopen(nullptr, RTLD_NOW);
  ASSERT_NE(self, nullptr);
  const PreloadResult r = preload_kernel_functions(self, "/proc/self/exe");
  EXPECT_TRUE(r.skipped.empty()) << r.skipped;
  EXPECT_GT(r.symbols, 0);
  EXPECT_EQ(r.kernels, 0);
  ::setenv("GAUNTLET_CUDA_PRELOAD", "0", 1);
  const PreloadResult off = preload_kernel_functions(self, "/proc/self/exe");
  ::unsetenv("GAUNTLET_CUDA_PRELOAD");
  EXPECT_EQ(off.symbols, 0);
  EXPECT_EQ(off.skipped, "GAUNTLET_CUDA_PRELOAD=0");
}

// Under an injected CUDA tool (compute-sanitizer sets CUDA_INJECTION64_PATH in its target) the
// probes' error returns would be reported as the kernel's failed calls: nothing is tried.
TEST(KernelPreload, AnInjectedCudaToolSkipsIt) {
  void* self = dlopen(nullptr, RTLD_NOW);
  ASSERT_NE(self, nullptr);
  ::setenv("CUDA_INJECTION64_PATH", "/opt/tool/libinjection.so", 1);
  const PreloadResult r = preload_kernel_functions(self, "/proc/self/exe");
  ::unsetenv("CUDA_INJECTION64_PATH");
  EXPECT_EQ(r.symbols, 0);
  EXPECT_NE(r.skipped.find("CUDA_INJECTION64_PATH"), std::string::npos) << r.skipped;
}

}  // namespace
}  // namespace gauntlet::worker
