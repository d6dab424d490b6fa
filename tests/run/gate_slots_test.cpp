// Gate slots: a kernel's gates in flight, the timing gate's exclusive hold, slots lent by idle
// processes, and the host-wide GPU gate slots entered lowest rank first.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <vector>
#include <thread>

#include "gauntlet/run/verify.h"
#include "gauntlet/sandbox/file_lock.h"
#include "gauntlet/sandbox/gpu_slots.h"

namespace gauntlet {
namespace {

using namespace std::chrono_literals;

// Starts acquire() on a thread; `done` turns true once it got a slot.
std::thread acquire_async(GateSlots& slots, std::atomic<bool>& done) {
  return std::thread([&] {
    slots.acquire();
    done = true;
  });
}

TEST(GateSlots, AcquireBlocksAtTheLimitAndReleaseLetsTheNextIn) {
  GateSlots slots(2);
  slots.acquire();
  slots.acquire();
  std::atomic<bool> third{false};
  std::thread t = acquire_async(slots, third);
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(third.load()) << "a third gate started with two slots";
  slots.release();
  t.join();
  EXPECT_TRUE(third.load());
}

TEST(GateSlots, AnExclusiveHoldWaitsForAllAndKeepsNewGatesOut) {
  GateSlots slots(2);
  slots.acquire();
  std::atomic<bool> exclusive{false}, later{false};
  std::thread timing([&] {
    slots.acquire_all();
    exclusive = true;
  });
  // Queued first, however slowly its thread starts (a loaded CI machine), so what follows is order.
  while (slots.exclusive_waiting() == 0 && !exclusive.load()) std::this_thread::sleep_for(1ms);
  EXPECT_FALSE(exclusive.load()) << "the exclusive hold did not wait for the gate in flight";
  std::thread other = acquire_async(slots, later);  // arrives while the exclusive one waits
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(later.load()) << "a new gate overtook the waiting exclusive hold";
  slots.release();
  timing.join();
  EXPECT_TRUE(exclusive.load());
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(later.load()) << "a gate started during the exclusive hold";
  slots.release_all();
  other.join();
  EXPECT_TRUE(later.load());
  slots.release();
}

// Gates waiting for a slot get it lowest rank first, whatever order they arrived in.
TEST(GateSlots, WaitingGatesGetTheirSlotsLowestRankFirst) {
  GateSlots slots(1);
  slots.acquire();
  std::mutex mu;
  std::vector<int> order;
  std::vector<std::thread> waiting;
  for (int rank : {5, 1, 3}) {
    waiting.emplace_back([&, rank] {
      slots.acquire(rank);
      {
        std::lock_guard<std::mutex> lock(mu);
        order.push_back(rank);
      }
      slots.release();
    });
    // Each queued before the next arrives, however slowly threads start on a loaded machine.
    while (slots.waiting() < int(waiting.size())) std::this_thread::sleep_for(1ms);
  }
  slots.release();
  for (std::thread& t : waiting) t.join();
  EXPECT_EQ(order, (std::vector<int>{1, 3, 5}));
}

// With every host-wide GPU gate slot held, a process's gates waiting for one get it lowest rank
// first, whatever order they arrived in (the host's own line, a file lock, keeps no ranks).
TEST(GateSlots, GpuGateSlotsGoToTheProcesssGatesLowestRankFirst) {
  const std::string lock = ::testing::TempDir() + "/ranked-gate-slots-" + std::to_string(getpid()) + ".lock";
  auto held_elsewhere = std::make_unique<GpuSlot>(lock, GpuSlot::kGate, 1);
  ASSERT_TRUE(held_elsewhere->held());
  std::mutex mu;
  std::vector<int> order;
  std::vector<std::thread> waiting;
  const auto wait_for_slot = [&](int rank) {
    waiting.emplace_back([&, rank] {
      std::unique_ptr<GpuSlot> slot = take_gpu_gate_slot(lock, 1, rank);
      EXPECT_TRUE(slot->held());
      std::lock_guard<std::mutex> guard(mu);
      order.push_back(rank);
    });  // the slot goes with the thread's end, to the next
  };
  wait_for_slot(5);
  // The first is in the host's line once it holds the line's queue lock (gpu_slots.cpp).
  for (FileLock probe; probe.try_lock(lock + ".gateq", FileLock::Mode::Exclusive); probe.unlock())
    std::this_thread::sleep_for(1ms);
  wait_for_slot(3);
  while (gpu_gate_slot_line_waiting() < 1) std::this_thread::sleep_for(1ms);
  wait_for_slot(1);
  while (gpu_gate_slot_line_waiting() < 2) std::this_thread::sleep_for(1ms);
  held_elsewhere.reset();
  for (std::thread& t : waiting) t.join();
  EXPECT_EQ(order, (std::vector<int>{5, 1, 3}));
}

TEST(GateSlots, SlotsLentByAnotherProcessAddToTheOwnOnes) {
  // The lent count lives in shared memory and is raised by another process, which never
  // notifies this one: the waiting acquire must see it by itself.
  void* mem = mmap(nullptr, sizeof(std::atomic<int>), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  auto* lent = new (mem) std::atomic<int>(0);
  GateSlots slots(1, lent);
  EXPECT_EQ(slots.total(), 1);
  slots.acquire();
  std::atomic<bool> second{false};
  std::thread t = acquire_async(slots, second);
  std::this_thread::sleep_for(150ms);
  EXPECT_FALSE(second.load());
  const pid_t kid = fork();
  if (kid == 0) {
    lent->fetch_add(2);  // an idle audit lane lends its --jobs
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(kid, &status, 0), kid);
  const auto t0 = std::chrono::steady_clock::now();
  t.join();
  EXPECT_TRUE(second.load());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  EXPECT_EQ(slots.total(), 3);
  slots.release();
  slots.release();
  munmap(mem, sizeof(std::atomic<int>));
}

}  // namespace
}  // namespace gauntlet
