// A kernel report's environment: the GPU usage a kernel's children add since the kernel began.
#include "../../src/run/kernel_environment.h"

#include <gtest/gtest.h>

#include "../../src/worker/startup_phases.h"

namespace gauntlet {
namespace {

// CUDA children's load stamps reach the report as sums since the kernel began, and only those.
TEST(KernelEnvironment, ChildStartsAreTheKernelsOwnSums) {
  worker::StartupPhases p;
  p.load_read_ns = 1'100'000'000;
  p.ready_ns = 1'400'000'000;
  const std::string child = worker::with_startup_phases(R"({"name":"GPU"})", p);
  note_child_start(1'000'000'000, 1'500'000'000, child);  // an earlier kernel's child
  const GpuCounters before = GpuCounters::now();
  Launcher launcher(SandboxOptions{});
  nlohmann::json env;
  add_gpu_usage(&env, before, launcher);
  EXPECT_FALSE(env.contains("child_starts")) << "no child of this kernel loaded yet: " << env.dump();
  note_child_start(1'000'000'000, 1'500'000'000, child);
  note_child_start(2'000'000'000, 2'600'000'000,
                   worker::with_startup_phases("{}", [] {
                     worker::StartupPhases q;
                     q.load_read_ns = 2'200'000'000;
                     q.ready_ns = 2'500'000'000;
                     return q;
                   }()));
  add_gpu_usage(&env, before, launcher);
  ASSERT_TRUE(env.contains("child_starts")) << env.dump();
  const nlohmann::json& s = env["child_starts"];
  EXPECT_EQ(s["children"].get<long>(), 2);
  EXPECT_NEAR(s["load_in_flight_seconds"].get<double>(), 0.1 + 0.2, 1e-9);
  EXPECT_NEAR(s["reply_in_flight_seconds"].get<double>(), 0.1 + 0.1, 1e-9);
  EXPECT_NEAR(s["load_total_seconds"].get<double>(), 0.5 + 0.6, 1e-9);
}

}  // namespace
}  // namespace gauntlet
