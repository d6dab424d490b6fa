// A load under start slots (gpu_slots.h), on a fake device (CPU children take its slots as
// CUDA children do): a load waits while every slot is held, and a load that hangs (its kernel's
// static initializer sleeps) gives its slot up at the bound instead of at its timeout.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "gauntlet/build/builder.h"
#include "gauntlet/sandbox/gpu_slots.h"
#include "gauntlet/sandbox/sandbox.h"

namespace gauntlet {
namespace {

const char* kQuick = R"CPP(#include <torch/torch.h>
torch::Tensor forward(const torch::Tensor& x) { return x.clone(); }
)CPP";
// Hangs in dlopen, as a kernel whose static initializer never returns would.
const char* kHangsWhileLoading = R"CPP(#include <torch/torch.h>
#include <unistd.h>
static const int kSlept = [] { sleep(30); return 1; }();
torch::Tensor forward(const torch::Tensor& x) { return x.clone() + kSlept; }
)CPP";

struct Built {
  std::string dir;
  BuildResult quick, hangs;
};

const Built& built_kernels() {
  static const Built b = [] {
    Built k;
    k.dir = "/tmp/gauntlet-start-slot-test-" + std::to_string(getpid());
    (void)!system(("mkdir -p " + k.dir).c_str());
    for (auto [name, text, out] : {std::tuple{"quick", kQuick, &k.quick}, std::tuple{"hangs", kHangsWhileLoading, &k.hangs}}) {
      std::ofstream(k.dir + "/" + name + ".cpp") << text;
      BuildRequest r;
      r.source_path = k.dir + "/" + name + ".cpp";
      r.entries = {"forward"};
      *out = build_kernel(r, default_build_config());
    }
    return k;
  }();
  return b;
}

SandboxOptions fake_device(const std::string& lock, int timeout_seconds) {
  SandboxOptions o;
  o.fake_gpu_turn_lock = lock;
  o.gpu_start_slots = 1;
  o.gpu_start_slot_bound_seconds = 1.0;
  o.timeout_seconds = timeout_seconds;
  return o;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(GpuStartSlotLoad, ALoadWaitsWhileEverySlotIsHeld) {
  const Built& k = built_kernels();
  ASSERT_TRUE(k.quick.ok) << k.quick.error;
  const std::string lock = k.dir + "/wait.lock";
  auto held = std::make_unique<GpuSlot>(lock, GpuSlot::kStart, 1);
  ASSERT_TRUE(held->held());
  Launcher launcher(fake_device(lock, 60));
  std::string error;
  auto s = launcher.spawn(&error);
  ASSERT_TRUE(s) << error;
  std::atomic<bool> loaded{false};
  Outcome lo;
  std::thread t([&] {
    lo = s->load(k.quick.so_path, "forward");
    loaded = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_FALSE(loaded.load()) << "the load went ahead while the only start slot was held";
  held.reset();
  t.join();
  EXPECT_EQ(lo.kind, Outcome::Kind::Ok) << lo.message;
}

TEST(GpuStartSlotLoad, ALoadThatHangsGivesItsSlotUpAtTheBound) {
  const Built& k = built_kernels();
  ASSERT_TRUE(k.quick.ok) << k.quick.error;
  ASSERT_TRUE(k.hangs.ok) << k.hangs.error;
  const std::string lock = k.dir + "/bound.lock";
  // The hung load's own limit is 20 s; the bound 1 s. Without the bound, the quick child would
  // wait the full 20 s for the only slot.
  Launcher hung_launcher(fake_device(lock, 20));
  Launcher quick_launcher(fake_device(lock, 60));
  std::string error;
  auto hung = hung_launcher.spawn(&error);
  ASSERT_TRUE(hung) << error;
  Outcome hung_load;
  std::thread t([&] { hung_load = hung->load(k.hangs.so_path, "forward"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // it holds the slot by now
  const auto t0 = std::chrono::steady_clock::now();
  auto quick = quick_launcher.spawn(&error);
  ASSERT_TRUE(quick) << error;
  Outcome lo = quick->load(k.quick.so_path, "forward");
  const double waited = seconds_since(t0);
  EXPECT_EQ(lo.kind, Outcome::Kind::Ok) << lo.message;
  EXPECT_LT(waited, 15.0) << "the quick child waited out the hung load's timeout";
  t.join();
  EXPECT_EQ(hung_load.kind, Outcome::Kind::TimedOut) << hung_load.message;
}

}  // namespace
}  // namespace gauntlet
