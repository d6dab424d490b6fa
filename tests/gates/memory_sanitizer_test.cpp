// The memory gate's compute-sanitizer sub-check (CUDA kernels): parsing memcheck and initcheck
// reports into one line, on texts shaped like the tool's output (raw, and as read_capture_tail
// returns it, newlines turned into spaces), the command line it runs, and the host-wide turn its
// children take when they share the host's network namespace.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "gauntlet/sandbox/file_lock.h"
#include "gauntlet/sandbox/sandbox.h"

namespace gauntlet::memory_gate {
struct SanitizerReport {
  bool found = false;
  std::string kind;
  std::string kernel;
  std::string thread, block;
  std::string where;
  std::string message;
  size_t offset = std::string::npos;
  int64_t errors = -1;
  std::string tool_error;
};
SanitizerReport parse_sanitizer_report(const std::string& tool, const std::string& text);
std::vector<std::string> sanitizer_command(const std::string& path, const std::string& tool, int timeout_s);
std::unique_ptr<FileLock> sanitizer_turn(bool shares_host_network, const std::string& lock_path, double* waited_seconds);
}  // namespace gauntlet::memory_gate

namespace {

namespace mg = gauntlet::memory_gate;

std::string flatten(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

// An out-of-bounds store one element past a 1024-float output (the shape memcheck prints since CUDA 12).
const char* kMemcheckOob =
    "========= COMPUTE-SANITIZER\n"
    "========= Invalid __global__ write of size 4 bytes\n"
    "=========     at relu_oob_kernel(const float *, float *, long)+0x1c0\n"
    "=========     by thread (0,0,0) in block (4,0,0)\n"
    "=========     Access at 0x7f3a4e201000 is out of bounds\n"
    "=========     and is 0 bytes after the nearest allocation at 0x7f3a4e200000 of size 4,096 bytes\n"
    "=========     Saved host backtrace up to driver entry point at kernel launch time\n"
    "=========         Host Frame: [0x2ef045] in libcuda.so.1\n"
    "=========\n"
    "========= Program hit cudaErrorLaunchFailure (error 719) due to \"unspecified launch failure\" on CUDA API call to cudaStreamSynchronize.\n"
    "=========     Saved host backtrace up to driver entry point at error\n"
    "========= ERROR SUMMARY: 2 errors\n";

TEST(MemorySanitizerReport, MemcheckOutOfBoundsStore) {
  for (const std::string& text : {std::string(kMemcheckOob), flatten(kMemcheckOob)}) {
    const mg::SanitizerReport r = mg::parse_sanitizer_report("memcheck", text);
    ASSERT_TRUE(r.found);
    EXPECT_EQ(r.kind, "Invalid __global__ write of size 4 bytes");
    EXPECT_EQ(r.kernel, "relu_oob_kernel");
    EXPECT_EQ(r.thread, "(0,0,0)");
    EXPECT_EQ(r.block, "(4,0,0)");
    EXPECT_EQ(r.where, "0 bytes after the end of a 4096-byte allocation");
    EXPECT_EQ(r.errors, 2);
    EXPECT_EQ(r.message,
              "memcheck: Invalid __global__ write of size 4 bytes in relu_oob_kernel (thread (0,0,0) block (4,0,0)), "
              "0 bytes after the end of a 4096-byte allocation");
    EXPECT_EQ(text.compare(r.offset, 9, "========="), 0);
    EXPECT_GT(r.offset, 0u);  // after the banner
    EXPECT_TRUE(r.tool_error.empty());
  }
}

TEST(MemorySanitizerReport, OlderFormatsAndFarAccesses) {
  // "at 0x... in fn" (CUDA 11), an address far before any allocation, big numbers with commas.
  const std::string text =
      "========= Invalid __global__ read of size 8 bytes\n"
      "=========     at 0x3b0 in void gather_kernel<double>(double const*, long const*, double*, int)\n"
      "=========     by thread (251,0,0) in block (0,0,0)\n"
      "=========     Address 0x964000008 is out of bounds\n"
      "=========     and is 33,036,889,217 bytes before the nearest allocation at 0xae4d2fa00 of size 400,000 bytes\n"
      "========= ERROR SUMMARY: 1 error\n";
  const mg::SanitizerReport r = mg::parse_sanitizer_report("memcheck", text);
  ASSERT_TRUE(r.found);
  EXPECT_EQ(r.kernel, "gather_kernel<double>");
  EXPECT_EQ(r.where, "33036889217 bytes before the start of a 400000-byte allocation");
  EXPECT_EQ(r.errors, 1);
  // Inside a caching-allocator segment (what happens without PYTORCH_NO_CUDA_MEMORY_CACHING).
  const mg::SanitizerReport inside = mg::parse_sanitizer_report(
      "memcheck",
      "========= Invalid __global__ write of size 256 bytes\n=========     at bulk_copy(unsigned char *, int)+0x120\n"
      "=========     Access to 0x147267fff80 is out of bounds\n"
      "=========     and is inside the nearest allocation at 0x14725400000 of size 20971520 bytes\n");
  EXPECT_EQ(inside.where, "inside a 20971520-byte allocation");
  EXPECT_EQ(inside.errors, -1);  // no summary: the tool did not finish
}

TEST(MemorySanitizerReport, InitcheckDeviceReadAndHostCopy) {
  const std::string device_read =
      "========= COMPUTE-SANITIZER\n"
      "========= Uninitialized __global__ memory read of size 4 bytes\n"
      "=========     at sum_rows_kernel(const float *, float *, int, int)+0x2a0\n"
      "=========     by thread (31,0,0) in block (2,0,0)\n"
      "=========     Address 0x7f615d40daf0\n"
      "=========     Saved host backtrace up to driver entry point at kernel launch time\n"
      "========= ERROR SUMMARY: 1 error\n";
  mg::SanitizerReport r = mg::parse_sanitizer_report("initcheck", flatten(device_read));
  ASSERT_TRUE(r.found);
  EXPECT_EQ(r.message,
            "initcheck: Uninitialized __global__ memory read of size 4 bytes in sum_rows_kernel (thread (31,0,0) block (2,0,0))");
  // An output element never written, read when the worker copies the output back.
  const std::string host_copy =
      "========= COMPUTE-SANITIZER\n"
      "========= Host API memory access error at host access to 0x7f7fcdc01200 of size 400 bytes\n"
      "=========     Uninitialized access at 0x7f7fcdc01300 on access by cudaMemcpy source\n"
      "=========     Saved host backtrace up to driver entry point at error\n"
      "=========     Host Frame: [0x1fe264] in libcuda.so.1\n"
      "========= ERROR SUMMARY: 1 error\n";
  r = mg::parse_sanitizer_report("initcheck", host_copy);
  ASSERT_TRUE(r.found);
  EXPECT_EQ(r.kind, "Host API memory access error at host access to 0x7f7fcdc01200 of size 400 bytes");
  EXPECT_EQ(r.where, "uninitialized bytes read by cudaMemcpy source");
  EXPECT_TRUE(r.kernel.empty());
}

TEST(MemorySanitizerReport, CleanRunsAndToolFailures) {
  mg::SanitizerReport r = mg::parse_sanitizer_report(
      "memcheck", "========= COMPUTE-SANITIZER\nsome worker line\n========= ERROR SUMMARY: 0 errors\n");
  EXPECT_FALSE(r.found);
  EXPECT_EQ(r.errors, 0);
  EXPECT_TRUE(r.tool_error.empty());
  r = mg::parse_sanitizer_report(
      "memcheck", "========= COMPUTE-SANITIZER\n========= Error: Target application terminated before first instrumented API call\n"
                  "========= Error: process didn't terminate successfully\n");
  EXPECT_FALSE(r.found);
  EXPECT_EQ(r.tool_error, "Error: Target application terminated before first instrumented API call");
  EXPECT_EQ(r.errors, -1);
  EXPECT_FALSE(mg::parse_sanitizer_report("memcheck", "").found);
  // Only an API error: it is the report (an illegal access is sometimes seen only at the next sync).
  r = mg::parse_sanitizer_report(
      "memcheck",
      "========= Program hit cudaErrorIllegalAddress (error 700) due to \"an illegal memory access was encountered\" on CUDA API call to cudaDeviceSynchronize.\n"
      "========= ERROR SUMMARY: 1 error\n");
  ASSERT_TRUE(r.found);
  EXPECT_EQ(r.message.rfind("memcheck: Program hit cudaErrorIllegalAddress (error 700)", 0), 0u) << r.message;
}

TEST(MemorySanitizerCommand, ToolOptionsBeforeTheWorker) {
  const std::vector<std::string> m = mg::sanitizer_command("/usr/local/cuda/bin/compute-sanitizer", "memcheck", 240);
  ASSERT_GE(m.size(), 3u);
  EXPECT_EQ(m[0], "/usr/local/cuda/bin/compute-sanitizer");
  EXPECT_EQ(m[1], "--tool");
  EXPECT_EQ(m[2], "memcheck");
  auto has = [&](const std::vector<std::string>& v, const std::string& opt, const std::string& val) {
    for (size_t i = 0; i + 1 < v.size(); ++i)
      if (v[i] == opt && v[i + 1] == val) return true;
    return false;
  };
  EXPECT_TRUE(has(m, "--launch-timeout", "240"));
  EXPECT_TRUE(has(m, "--padding", "512"));
  const std::vector<std::string> i = mg::sanitizer_command("cs", "initcheck", 60);
  EXPECT_TRUE(has(i, "--tool", "initcheck"));
  EXPECT_FALSE(has(i, "--padding", "512"));
}

// Sanitizer children without a network namespace of their own take the host-wide turn: while one
// holds it nobody else can have it (another open description's try_lock fails, as another
// process's would); children with their own namespace take nothing, and the measurement switch
// turns the rule off.
TEST(MemorySanitizerTurn, ChildrenSharingTheHostNetworkRunOneAtATime) {
  const std::string path = "/tmp/gauntlet-sanitizer-turn-test-" + std::to_string(getpid()) + ".lock";
  double waited = -1;
  {
    const std::unique_ptr<gauntlet::FileLock> own_network = mg::sanitizer_turn(false, path, &waited);
    EXPECT_FALSE(own_network->held());
    EXPECT_EQ(waited, 0);
    gauntlet::FileLock other;
    EXPECT_TRUE(other.try_lock(path, gauntlet::FileLock::Mode::Exclusive));
  }
  {
    const std::unique_ptr<gauntlet::FileLock> shared = mg::sanitizer_turn(true, path, &waited);
    EXPECT_TRUE(shared->held());
    EXPECT_GE(waited, 0);
    gauntlet::FileLock other;
    EXPECT_FALSE(other.try_lock(path, gauntlet::FileLock::Mode::Exclusive)) << "a second sanitizer child got the turn";
  }
  gauntlet::FileLock after;
  EXPECT_TRUE(after.try_lock(path, gauntlet::FileLock::Mode::Exclusive)) << "the turn outlived its holder";
  after.unlock();
  ::setenv("GAUNTLET_SANITIZER_SHARED_NETWORK", "concurrent", 1);
  const std::unique_ptr<gauntlet::FileLock> measured = mg::sanitizer_turn(true, path, &waited);
  ::unsetenv("GAUNTLET_SANITIZER_SHARED_NETWORK");
  EXPECT_FALSE(measured->held());
  ::unlink(path.c_str());
}

// Which children share the host's network namespace, as the launcher sees it before any child
// started: namespaces off, or narrowed without "net", share it; the default set does not.
TEST(MemorySanitizerTurn, TheLauncherKnowsWhenItsChildrenShareTheHostNetwork) {
  gauntlet::SandboxOptions off;
  off.namespaces = false;
  EXPECT_TRUE(gauntlet::Launcher(off).children_share_host_network());
  gauntlet::SandboxOptions on;
  on.namespaces = true;
  const char* before = std::getenv("GAUNTLET_NAMESPACES");
  const std::string saved = before ? before : "";
  ::unsetenv("GAUNTLET_NAMESPACES");
  EXPECT_FALSE(gauntlet::Launcher(on).children_share_host_network());
  ::setenv("GAUNTLET_NAMESPACES", "mount,pid,ipc", 1);
  EXPECT_TRUE(gauntlet::Launcher(on).children_share_host_network());
  ::setenv("GAUNTLET_NAMESPACES", "net,mount", 1);
  EXPECT_FALSE(gauntlet::Launcher(on).children_share_host_network());
  if (before) ::setenv("GAUNTLET_NAMESPACES", saved.c_str(), 1);
  else ::unsetenv("GAUNTLET_NAMESPACES");
}

}  // namespace
