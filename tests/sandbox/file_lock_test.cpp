// Host-wide file locks: exclusion across threads and processes, shared and exclusive, without waiting.
#include "gauntlet/sandbox/file_lock.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace gauntlet {
namespace {


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

TEST(FileLock, TryLockFailsAtOnceBesideAConflictingLock) {
  const std::string path = temp_lock_path("try");
  FileLock shared(path, FileLock::Mode::Shared);
  FileLock probe;
  EXPECT_FALSE(probe.try_lock(path, FileLock::Mode::Exclusive));
  EXPECT_FALSE(probe.held());
  EXPECT_TRUE(probe.try_lock(path, FileLock::Mode::Shared));
  probe.unlock();
  shared.unlock();
  EXPECT_TRUE(probe.try_lock(path, FileLock::Mode::Exclusive));
  unlink(path.c_str());
}

}  // namespace
}  // namespace gauntlet
