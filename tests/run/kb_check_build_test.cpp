// The KernelBench-style check runs the build verify made: a kernel with a backward entry must not be
// built a second time for it (on the GPU host each such build is an nvcc run of ~28 s a kernel); it
// says how many children it started.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gauntlet/run/verify.h"
#include "gauntlet/sandbox/sandbox.h"
#include "gauntlet/schema/manifest.h"

namespace gauntlet {
namespace {

namespace fs = std::filesystem;

std::string read_all(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// corpus/controls/softmax (forward and backward entries) in a folder of its own, its source made
// unique to this run so that no earlier build of it is in the cache.
fs::path unique_softmax_copy(const std::string& name) {
  const fs::path corpus = fs::path(GAUNTLET_SOURCE_DIR) / "corpus/controls";
  const fs::path dir = fs::path(::testing::TempDir()) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(corpus / "softmax.json", dir / "softmax.json");
  std::ofstream(dir / "softmax.cpp") << read_all(corpus / "softmax.cpp") << "\n// " << name << " " << ::getpid()
                                     << " " << std::chrono::steady_clock::now().time_since_epoch().count() << "\n";
  return dir / "softmax.json";
}

TEST(KbCheckBuild, TheCheckFindsVerifysBuildOfAKernelWithABackwardEntry) {
  std::string error;
  auto m = load_manifest(unique_softmax_copy("kbcheck-build-shared").string(), &error);
  ASSERT_TRUE(m) << error;
  ASSERT_FALSE(m->backward_entry.empty()) << "the control must have a backward entry for this test to mean anything";
  Launcher launcher{SandboxOptions{}};
  VerifyOptions vo;
  vo.seed = 1;
  vo.progress = false;
  vo.gates = {"contract"};
  vo.replay_dir = ::testing::TempDir() + "/kbcheck-build-replays";
  auto report = verify_kernel(*m, vo, launcher, &error);
  ASSERT_TRUE(report) << error;
  ASSERT_TRUE(report->build.ok) << report->build.error;
  EXPECT_FALSE(report->build.cache_hit) << "the copy's source is unique, so verify must have built it";

  auto check = kb_style_check(*m, launcher, &error);
  ASSERT_TRUE(check) << error;
  EXPECT_TRUE(check->accepted) << check->reason;
  EXPECT_TRUE(check->build_cache_hit) << "the check built the kernel again instead of running verify's build";
  // One child for its trials, a CPU one: no CUDA hardware queues (the CUDA count: cuda_pipeline_test).
  EXPECT_EQ(check->children, 1);
  EXPECT_EQ(check->hardware_queues, 0u);
}

TEST(KbCheckBuild, VerifyAndTheCheckAskForTheSameEntries) {
  KernelManifest m;
  m.source = "k.cu";
  m.entry = "forward";
  m.backward_entry = "backward";
  m.device = "cuda";
  const BuildRequest req = native_build_request(m);
  EXPECT_EQ(req.entries, (std::vector<std::string>{"forward", "backward"}));
  EXPECT_EQ(req.device, "cuda");
  m.backward_entry.clear();
  EXPECT_EQ(native_build_request(m).entries, (std::vector<std::string>{"forward"}));
}

}  // namespace
}  // namespace gauntlet
