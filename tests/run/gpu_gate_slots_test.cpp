// A kernel's gates under GPU gate slots (gpu_slots.h, SandboxOptions::gpu_gate_slots), on a fake
// device whose CPU children take them as CUDA gates do: no gate runs while every slot is held
// elsewhere, one slot for four gate threads still gets every gate run (none waits holding one), and
// a spinning kernel's gate gives its slot up once its child overruns the GPU turn's bound.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <thread>

#include "gauntlet/run/verify.h"
#include "gauntlet/sandbox/file_lock.h"
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

void verify_on_fake_gpu(const std::string& manifest, const SandboxOptions& o, std::vector<std::string> gates,
                        VerifyRun* run) {
  auto m = load_manifest(std::string(GAUNTLET_SOURCE_DIR) + "/corpus/" + manifest, &run->error);
  if (!m) return;
  Launcher launcher(o);
  VerifyOptions vo;
  vo.seed = 3;
  vo.progress = false;
  vo.jobs = 4;
  vo.gates = std::move(gates);
  vo.replay_dir = ::testing::TempDir() + "/gate-slot-replays";
  vo.on_gate = [run](const GateVerdict&) { ++run->gates_in; };
  run->report = verify_kernel(*m, vo, launcher, &run->error);
}

void verify_relu(const std::string& lock, int gate_slots, VerifyRun* run) {
  SandboxOptions o;
  o.fake_gpu_turn_lock = lock;
  o.gpu_gate_slots = gate_slots;
  verify_on_fake_gpu("controls/relu.json", o, kGates, run);
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

// The only gate slot is held by a spinning kernel's contract gate (corpus/hostile/infinite_loop,
// killed at its 8 s --timeout and confirmed in a fresh child); relu's contract gate waits for it.
// Holding the slot for that whole run, the spinner would keep relu waiting at least 8 s from the
// moment it was seen holding it (a lower bound, not a measurement: no clock luck decides it);
// giving it up at the turn bound (0.3 s), it lets relu through long before.
TEST(GpuGateSlots, ASpinningGateGivesItsSlotUpAtTheTurnBound) {
  const std::string lock = fresh_lock("gate-slots-spinner");
  {
    VerifyRun warm;  // relu built and run once, so that its build is not what takes the time
    verify_relu(lock, 0, &warm);
    ASSERT_TRUE(warm.report) << warm.error;
  }
  SandboxOptions o;
  o.fake_gpu_turn_lock = lock;
  o.gpu_gate_slots = 1;
  o.gpu_turn_bound_seconds = 0.3;
  o.timeout_seconds = 8;
  VerifyRun spinner;
  std::thread spin(verify_on_fake_gpu, "hostile/infinite_loop.json", o, std::vector<std::string>{"contract"}, &spinner);
  // Until the spinner's gate holds the slot (after its build): the slot file is locked.
  bool seen_held = false;
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120); !seen_held && std::chrono::steady_clock::now() < until;) {
    FileLock probe;
    if (access(gpu_slot_path(lock, GpuSlot::kGate, 0).c_str(), F_OK) == 0 &&
        !probe.try_lock(gpu_slot_path(lock, GpuSlot::kGate, 0), FileLock::Mode::Exclusive))
      seen_held = true;
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(seen_held) << "the spinner's gate never took the slot";
  const auto t0 = std::chrono::steady_clock::now();
  VerifyRun relu;
  verify_on_fake_gpu("controls/relu.json", o, {"contract"}, &relu);
  const double relu_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  spin.join();
  ASSERT_TRUE(relu.report) << relu.error;
  EXPECT_EQ(relu.report->verdict, "pass");
  EXPECT_LT(relu_seconds, 8.0) << "relu's gate waited out the spinner's whole timeout for the gate slot";
  ASSERT_TRUE(spinner.report) << spinner.error;
  ASSERT_EQ(spinner.report->gates.size(), 1u);
  EXPECT_EQ(spinner.report->gates[0].category, Category::Timeout) << "the spinner keeps its own timeout";
}

}  // namespace
}  // namespace gauntlet
