// The selftest on a host without CUDA: a "device": "cuda" manifest is reported as skipped, with
// the reason, and is neither a mismatch nor a harness error (the CPU CI walks the whole corpus).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "gauntlet/sandbox/sandbox.h"
#include "gauntlet/run/selftest.h"

namespace gauntlet {
namespace {

TEST(SelftestCuda, CudaManifestIsSkippedWithoutACudaDevice) {
  ::setenv("GAUNTLET_NO_CUDA", "1", 1);  // as on a host without /dev/nvidiactl, also on a GPU host
  SelftestOptions options;
  options.corpus_dir = std::string(GAUNTLET_SOURCE_DIR) + "/corpus/controls_cuda";
  Launcher launcher{SandboxOptions{}};
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  const int rc = run_selftest(options, launcher, out);
  ::unsetenv("GAUNTLET_NO_CUDA");
  std::rewind(out);
  std::string text;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, out)) text.append(buf, n);
  std::fclose(out);
  EXPECT_EQ(rc, 0) << text;
  EXPECT_NE(text.find("relu.json"), std::string::npos) << text;
  EXPECT_NE(text.find("skipped: a CUDA kernel, and this machine cannot run it: GAUNTLET_NO_CUDA=1"), std::string::npos) << text;
  // Every manifest there is a CUDA kernel (relu, softmax, layer_norm, sum, cumsum, matmul): all skipped.
  const size_t n = find_manifests(options.corpus_dir).size();
  EXPECT_GE(n, 6u);
  EXPECT_NE(text.find("0 mismatched, 0 harness errors, " + std::to_string(n) + " skipped"), std::string::npos) << text;
}

}  // namespace
}  // namespace gauntlet
