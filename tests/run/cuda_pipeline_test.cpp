// The CUDA path end to end: corpus/controls_cuda/relu.json through verify_kernel (nvcc build, the
// sandboxed worker moving inputs to the GPU and outputs back, every gate). Skips, with the reason,
// where no CUDA device or no nvcc exists (CI has neither): it runs on the GPU machine
// (tools/gpu/run-on-h200.sh with GPU_TESTS=1).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>

#include "gauntlet/schema/manifest.h"
#include "gauntlet/sandbox/sandbox.h"
#include "gauntlet/cases/gate.h"
#include "gauntlet/run/standard_check.h"
#include "gauntlet/run/verify.h"

namespace gauntlet {
namespace {

bool on_path(const std::string& exe) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::string d;
  while (std::getline(dirs, d, ':'))
    if (!d.empty() && access((d + "/" + exe).c_str(), X_OK) == 0) return true;
  return false;
}

std::string why_no_cuda() {
  if (access("/dev/nvidiactl", F_OK) != 0) return "no CUDA device (/dev/nvidiactl absent)";
  if (!on_path("nvcc") && access("/usr/local/cuda/bin/nvcc", X_OK) != 0) return "nvcc not found";
  return "";
}

std::optional<KernelManifest> cuda_relu(std::string* error) {
  return load_manifest(std::string(GAUNTLET_SOURCE_DIR) + "/corpus/controls_cuda/relu.json", error);
}

TEST(CudaPipeline, ReluControlPassesEveryGateOnTheGpu) {
  const std::string why = why_no_cuda();
  if (!why.empty()) GTEST_SKIP() << why;
  std::string error;
  auto m = cuda_relu(&error);
  ASSERT_TRUE(m) << error;
  ASSERT_EQ(m->device, "cuda");
  Launcher launcher{SandboxOptions{}};
  VerifyOptions vo;
  vo.seed = 1;
  vo.progress = false;
  vo.replay_dir = ::testing::TempDir() + "/cuda-pipeline-replays";
  auto report = verify_kernel(*m, vo, launcher, &error);
  ASSERT_TRUE(report) << error;
  ASSERT_TRUE(report->build.ok) << report->build.error;
  for (const GateVerdict& v : report->gates)
    EXPECT_TRUE(v.status == Status::Pass || v.status == Status::Skip)
        << v.name << " " << status_name(v.status) << ": " << v.message;
}

// The field's standard check of a CUDA kernel (an audit runs it for every kernel): its one child gets
// the concurrent gates' hardware queues (2 unless GAUNTLET_CONCURRENT_GATE_QUEUES says otherwise),
// not the driver's default, whose context cost twice as much (docs/gpu.md, thirty-eighth session).
TEST(CudaPipeline, TheStandardChecksChildTakesTheConcurrentGatesQueues) {
  const std::string why = why_no_cuda();
  if (!why.empty()) GTEST_SKIP() << why;
  std::string error;
  auto m = cuda_relu(&error);
  ASSERT_TRUE(m) << error;
  Launcher launcher{SandboxOptions{}};
  const StandardCheck check = run_standard_check(*m, launcher);
  EXPECT_EQ(check.verdict, "accept") << check.reason;
  EXPECT_EQ(check.children, 1);
  EXPECT_EQ(check.hardware_queues, concurrent_gate_queues());
  if (!std::getenv("GAUNTLET_CONCURRENT_GATE_QUEUES")) EXPECT_EQ(check.hardware_queues, 2u);
}

}  // namespace
}  // namespace gauntlet
