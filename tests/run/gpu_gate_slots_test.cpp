// A kernel's gates under GPU gate slots (gpu_slots.h, SandboxOptions::gpu_gate_slots), on a fake
// device whose CPU children take them as CUDA gates do: no gate runs while every slot is held
// elsewhere, and one slot for four gate threads still gets every gate run (none waits holding one).
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <thread>

#include "gauntlet/run/verify.h"
#include "gauntlet/sandbox/gpu_slots.h"
#include "gauntlet/sandbox/sandbox.h"
#include "gauntlet/schema/manifest.h"

namespace gauntlet {
namespace {

const std::vector<std::string> kGates = {"contract", "accuracy", "layouts", "statelessness"};

struct VerifyRun {
  std::optional<KernelReport> report;
  std::string error;
  std::atomic<int> gates_in{0};
};

void verify_relu(const std::string& lock, int gate_slots, VerifyRun* run) {
  auto m = load_manifest(std::string(GAUNTLET_SOURCE_DIR) + "/corpus/controls/relu.json", &run->error);
  if (!m) return;
  SandboxOptions o;
  o.fake_gpu_turn_lock = lock;
  o.gpu_gate_slots = gate_slots;
  Launcher launcher(o);
  VerifyOptions vo;
  vo.seed = 3;
  vo.progress = false;
  vo.jobs = 4;
  vo.gates = kGates;
  vo.replay_dir = ::testing::TempDir() + "/gate-slot-replays";
  vo.on_gate = [run](const GateVerdict&) { ++run->gates_in; };
  run->report = verify_kernel(*m, vo, launcher, &run->error);
}

std::string fresh_lock(const char* name) {
  return ::testing::TempDir() + "/" + name + "-" + std::to_string(getpid()) + ".lock";
}

TEST(GpuGateSlots, NoGateRunsWhileEverySlotIsHeldElsewhere) {
  const std::string lock = fresh_lock("gate-slots-held");
  {
    // Built and run once without slots first: the build (not a slot) must not be what keeps the
    // gates below from finishing, and without slots they finish well inside the wait below.
    VerifyRun warm;
    verify_relu(lock, 0, &warm);
    ASSERT_TRUE(warm.report) << warm.error;
    ASSERT_EQ(warm.report->verdict, "pass");
  }
  auto elsewhere = std::make_unique<GpuSlot>(lock, GpuSlot::kGate, 2);
  auto elsewhere_too = std::make_unique<GpuSlot>(lock, GpuSlot::kGate, 2);
  ASSERT_TRUE(elsewhere->held() && elsewhere_too->held());
  VerifyRun run;
  std::thread t(verify_relu, lock, 2, &run);
  // relu's four gates take under a second in all once built; none may finish while both slots are
  // held (whether one has is all that is read here, not how long anything took).
  std::this_thread::sleep_for(std::chrono::milliseconds(3000));
  EXPECT_EQ(run.gates_in.load(), 0) << "a gate ran while every GPU gate slot was held by another process";
  elsewhere.reset();
  t.join();
  ASSERT_TRUE(run.report) << run.error;
  EXPECT_EQ(run.gates_in.load(), int(kGates.size()));
  EXPECT_EQ(run.report->verdict, "pass");
}

TEST(GpuGateSlots, OneSlotForFourGateThreadsRunsEveryGate) {
  VerifyRun run;
  verify_relu(fresh_lock("gate-slots-one"), 1, &run);
  ASSERT_TRUE(run.report) << run.error;
  EXPECT_EQ(run.gates_in.load(), int(kGates.size()));
  EXPECT_EQ(run.report->verdict, "pass");
}

}  // namespace
}  // namespace gauntlet
