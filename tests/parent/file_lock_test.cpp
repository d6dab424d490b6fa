// Host-wide file locks and GPU turns: exclusion across threads and processes, re-entry, waits.
#include "gauntlet/file_lock.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>

namespace gauntlet {
namespace {

using Clock = std::chrono::steady_clock;

std::string temp_lock_path(const char* tag) {
  return "/tmp/gauntlet-test-" + std::string(tag) + "-" + std::to_string(getpid()) + ".lock";
}

TEST(FileLock, ExclusiveLocksExcludeThreadsOfOneProcess) {
  const std::string path = temp_lock_path("threads");
  std::atomic<int> inside{0}, most{0};
  auto worker = [&] {
    for (int i = 0; i < 20; ++i) {
      FileLock lock(path, FileLock::Mode::Exclusive);
      ASSERT_TRUE(lock.held());
      const int now = ++inside;
      most = std::max(most.load(), now);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      --inside;
    }
  };
  std::thread a(worker), b(worker), c(worker);
  a.join(), b.join(), c.join();
  EXPECT_EQ(most.load(), 1);
  unlink(path.c_str());
}

TEST(FileLock, SharedLocksCoexistAndExcludeAnExclusiveOne) {
  const std::string path = temp_lock_path("shared");
  FileLock first(path, FileLock::Mode::Shared), second(path, FileLock::Mode::Shared);
  EXPECT_TRUE(first.held() && second.held());
  std::atomic<bool> got{false};
  std::thread writer([&] {
    FileLock w(path, FileLock::Mode::Exclusive);
    got = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(got.load()) << "an exclusive lock was granted beside shared ones";
  first.unlock();
  second.unlock();
  writer.join();
  EXPECT_TRUE(got.load());
  unlink(path.c_str());
}

TEST(FileLock, AnUnopenableFileLeavesTheLockUnheld) {
  FileLock lock("/nonexistent-dir/gauntlet.lock", FileLock::Mode::Exclusive);
  EXPECT_FALSE(lock.held());
}

TEST(GpuTurn, LockFileIsNamedAfterTheGpuTheChildrenSee) {
  const char* saved = getenv("CUDA_VISIBLE_DEVICES");
  const std::string keep = saved ? saved : "";
  unsetenv("CUDA_VISIBLE_DEVICES");
  EXPECT_EQ(gpu_turn_path(3), "/tmp/gauntlet-gpu-turn-3.lock");
  setenv("CUDA_VISIBLE_DEVICES", "GPU-8a1c/x,GPU-77f0", 1);
  EXPECT_EQ(gpu_turn_path(0), "/tmp/gauntlet-gpu-turn-GPU-8a1c_x.lock");  // no path separators
  EXPECT_EQ(gpu_turn_path(1), "/tmp/gauntlet-gpu-turn-GPU-77f0.lock");
  saved ? setenv("CUDA_VISIBLE_DEVICES", keep.c_str(), 1) : unsetenv("CUDA_VISIBLE_DEVICES");
}

// A GPU index no machine has, so the test never meets a real gauntlet's turns.
constexpr int kTestGpu = 9731;

TEST(GpuTurn, ReenteringOnTheSameThreadDoesNotWait) {
  GpuTurn outer(kTestGpu);
  const auto t0 = Clock::now();
  {
    GpuTurn inner(kTestGpu);  // the timing gate's exchanges inside its clock section
    EXPECT_EQ(inner.waited_seconds(), 0.0);
  }
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 1.0);
}

TEST(GpuTurn, AnotherThreadWaitsUntilTheOuterTurnEnds) {
  std::atomic<bool> got{false};
  double waited = 0;
  std::thread other;
  {
    GpuTurn outer(kTestGpu);
    { GpuTurn inner(kTestGpu); }  // leaving the inner turn must not release the outer one
    other = std::thread([&] {
      GpuTurn t(kTestGpu);
      waited = t.waited_seconds();
      got = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_FALSE(got.load()) << "two threads held one GPU's turn at once";
  }
  other.join();
  EXPECT_TRUE(got.load());
  EXPECT_GE(waited, 0.15);
}

TEST(GpuTurn, ProcessesTakeTurnsOnOneGpu) {
  // Two processes each hold the turn 150 ms, three times; overlapping holds would show as a
  // shared marker file seen by both. Serialized, the run takes at least 6 x 150 ms.
  const std::string marker = temp_lock_path("marker");
  unlink(marker.c_str());
  const auto t0 = Clock::now();
  pid_t kids[2];
  for (pid_t& kid : kids) {
    kid = fork();
    if (kid == 0) {
      int overlaps = 0;
      for (int i = 0; i < 3; ++i) {
        GpuTurn t(kTestGpu);
        if (access(marker.c_str(), F_OK) == 0) ++overlaps;
        FILE* f = fopen(marker.c_str(), "w");
        if (f) fclose(f);
        usleep(150000);
        unlink(marker.c_str());
      }
      _exit(overlaps);
    }
  }
  for (pid_t kid : kids) {
    int status = 0;
    ASSERT_EQ(waitpid(kid, &status, 0), kid);
    EXPECT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "a process found the other inside its turn";
  }
  EXPECT_GE(std::chrono::duration<double>(Clock::now() - t0).count(), 0.85);
}

}  // namespace
}  // namespace gauntlet
