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

// The CUDA workers' case phases since the kernel began, and the allocator's driver calls of the
// cases that counted them (a worker on LibTorch before 2.9 sends none): only those cases.
TEST(KernelEnvironment, DriverMemoryCallsAreSummedOverTheCasesThatCountedThem) {
  wire::CaseReply earlier;
  earlier.has_phases = true;
  earlier.driver_allocs = 50;
  earlier.driver_frees = 50;
  add_worker_phases(earlier);  // an earlier kernel's case
  const GpuCounters before = GpuCounters::now();
  Launcher launcher(SandboxOptions{});
  wire::CaseReply uncounted;
  uncounted.has_phases = true;
  add_worker_phases(uncounted);
  nlohmann::json env;
  add_gpu_usage(&env, before, launcher);
  ASSERT_TRUE(env.contains("worker_phases")) << env.dump();
  EXPECT_EQ(env["worker_phases"]["cases"].get<long>(), 1);
  EXPECT_FALSE(env["worker_phases"].contains("driver_memory")) << "no case counted them: " << env.dump();
  wire::CaseReply counted;
  counted.has_phases = true;
  counted.driver_allocs = 3;
  counted.driver_frees = 1;
  add_worker_phases(counted);
  add_worker_phases(counted);
  add_gpu_usage(&env, before, launcher);
  EXPECT_EQ(env["worker_phases"]["cases"].get<long>(), 3);
  const nlohmann::json& d = env["worker_phases"]["driver_memory"];
  EXPECT_EQ(d["cases"].get<long>(), 2);
  EXPECT_EQ(d["allocs"].get<long>(), 6);
  EXPECT_EQ(d["frees"].get<long>(), 2);
}

}  // namespace
}  // namespace gauntlet
