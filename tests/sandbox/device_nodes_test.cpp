// hide_gpu_device_nodes on a fake /dev (a temporary folder with nvidia0, nvidiactl, nvidia-caps/):
// in a forked child with a private mount namespace, every GPU entry reads as /dev/null or an empty
// folder afterwards and other entries are untouched. Needs root or unprivileged user namespaces.
#include "gauntlet/sandbox/device_nodes.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include "../test_files.h"

namespace gauntlet {
namespace {

TEST(GpuDeviceNodes, NamesOfGpuNodes) {
  for (const char* n : {"nvidia0", "nvidia7", "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset",
                        "nvidia-caps", "nvidia-caps-imex-channels", "dri", "kfd"})
    EXPECT_TRUE(is_gpu_device_name(n)) << n;
  for (const char* n : {"null", "zero", "urandom", "shm", "pts", "fuse", "nvme0n1", "vfio", "."})
    EXPECT_FALSE(is_gpu_device_name(n)) << n;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(GpuDeviceNodes, FakeNodesAreCoveredInAPrivateMountNamespace) {
  char tmpl[] = "/tmp/gauntlet-fake-dev-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dev = tmpl;
  for (const char* n : {"nvidia0", "nvidiactl", "null-ish"}) std::ofstream(dev + "/" + n) << "GPU " << n;
  std::filesystem::create_directory(dev + "/nvidia-caps");
  std::ofstream(dev + "/nvidia-caps/nvidia-cap1") << "cap";
  std::filesystem::create_directory_symlink("nvidia-caps", dev + "/nvidia-link");
  int pfd[2];
  ASSERT_EQ(pipe(pfd), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(pfd[0]);
    auto leave = [&](const std::string& s) {
      ssize_t ignored = ::write(pfd[1], s.data(), s.size());
      (void)ignored;
      _exit(0);
    };
    const uid_t uid = getuid();
    if (unshare(uid == 0 ? CLONE_NEWNS : (CLONE_NEWUSER | CLONE_NEWNS)) != 0)
      leave(std::string("skip: no private mount namespace here: ") + strerror(errno));
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
      leave(std::string("skip: cannot make / private: ") + strerror(errno));
    std::string error;
    const int n = hide_gpu_device_nodes(dev, &error);
    struct stat st {}, null_st {};
    stat("/dev/null", &null_st);
    std::string out = "hidden=" + std::to_string(n) + " error=" + error;
    for (const char* f : {"nvidia0", "nvidiactl"}) {
      stat((dev + "/" + f).c_str(), &st);
      out += std::string(" ") + f + (S_ISCHR(st.st_mode) && st.st_rdev == null_st.st_rdev ? "=null" : "=visible") +
             "[" + read_all(dev + "/" + f) + "]";
    }
    out += " caps=" + std::to_string(std::distance(std::filesystem::directory_iterator(dev + "/nvidia-caps"),
                                                   std::filesystem::directory_iterator{}));
    out += " other=[" + read_all(dev + "/null-ish") + "]";
    leave(out);
  }
  ::close(pfd[1]);
  std::string got;
  char buf[512];
  for (ssize_t k; (k = ::read(pfd[0], buf, sizeof buf)) > 0;) got.append(buf, size_t(k));
  ::close(pfd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  gauntlet::testing::remove_tree(dev);
  if (got.rfind("skip: ", 0) == 0) GTEST_SKIP() << got.substr(6);
  // Three covered (nvidia0, nvidiactl, the nvidia-caps folder); the symlink is skipped.
  EXPECT_EQ(got, "hidden=3 error= nvidia0=null[] nvidiactl=null[] caps=0 other=[GPU null-ish]");
}

}  // namespace
}  // namespace gauntlet
