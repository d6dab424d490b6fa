// GPU slots (gpu_slots.h): K holders of a kind at once across threads and processes alike, the next
// waits until one lets go; no slots take nothing; start and gate slots are counted apart.
#include "gauntlet/sandbox/gpu_slots.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <thread>

namespace gauntlet {
namespace {

std::string fresh_lock(const char* name) {
  return ::testing::TempDir() + "/" + name + "-" + std::to_string(getpid()) + ".lock";
}

TEST(GpuSlots, NoSlotsTakeNothing) {
  GpuSlot none(fresh_lock("start-none"), GpuSlot::kStart, 0);
  EXPECT_FALSE(none.held());
  EXPECT_EQ(none.slot(), -1);
}

TEST(GpuSlots, SlotFilesThatCannotBeMadeLeaveTheStartUnlimited) {
  GpuSlot unlimited(::testing::TempDir() + "/no/such/dir/gpu.lock", GpuSlot::kGate, 2);
  EXPECT_FALSE(unlimited.held());  // returned at once instead of polling forever
}

TEST(GpuSlots, TwoSlotsHoldTwoChildrenAndTheThirdWaitsForOneToLetGo) {
  const std::string lock = fresh_lock("start-two");
  auto a = std::make_unique<GpuSlot>(lock, GpuSlot::kStart, 2);
  auto b = std::make_unique<GpuSlot>(lock, GpuSlot::kStart, 2);
  ASSERT_TRUE(a->held());
  ASSERT_TRUE(b->held());
  EXPECT_NE(a->slot(), b->slot());
  std::atomic<bool> third_held{false};
  std::thread third([&] {
    GpuSlot c(lock, GpuSlot::kStart, 2);
    third_held = c.held();
  });
  // The third cannot get in while both are held (it is blocked in flock, not spinning: no clock
  // decides this, only whether it has returned before a release).
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(third_held.load());
  b.reset();
  third.join();
  EXPECT_TRUE(third_held.load());
}

TEST(GpuSlots, StartAndGateSlotsAreCountedApart) {
  const std::string lock = fresh_lock("kinds");
  GpuSlot gate(lock, GpuSlot::kGate, 1);
  ASSERT_TRUE(gate.held());
  // The only gate slot is held; a start slot of the same GPU is still free (a held gate must be
  // able to start its children), and a second gate slot is not.
  GpuSlot start(lock, GpuSlot::kStart, 1);
  EXPECT_TRUE(start.held());
  std::atomic<bool> second_gate{false};
  std::thread t([&] {
    GpuSlot g(lock, GpuSlot::kGate, 1);
    second_gate = g.held();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(second_gate.load()) << "two holders of the only gate slot";
  gate.release();
  t.join();
  EXPECT_TRUE(second_gate.load());
}

TEST(GpuSlots, AnotherProcessHoldingEverySlotIsWaitedFor) {
  const std::string lock = fresh_lock("start-proc");
  int to_child[2], to_parent[2];
  ASSERT_EQ(pipe(to_child), 0);
  ASSERT_EQ(pipe(to_parent), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    GpuSlot held(lock, GpuSlot::kGate, 1);
    char c = held.held() ? 'h' : 'n';
    (void)!write(to_parent[1], &c, 1);
    (void)!read(to_child[0], &c, 1);  // hold until told
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(to_parent[0], &c, 1), 1);
  ASSERT_EQ(c, 'h');
  std::atomic<bool> got{false};
  std::thread waiter([&] {
    GpuSlot mine(lock, GpuSlot::kGate, 1);
    got = mine.held();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(got.load()) << "a second holder of the only slot";
  (void)!write(to_child[1], "x", 1);
  waiter.join();
  EXPECT_TRUE(got.load());
  int status = 0;
  waitpid(pid, &status, 0);
}

}  // namespace
}  // namespace gauntlet
