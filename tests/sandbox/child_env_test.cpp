// A sandboxed child's environment: a setting the gate adds (SandboxOptions::extra_env) replaces the
// same variable passed through from gauntlet's own environment, so a child never sees both (the
// memory gate's compute-sanitizer child turns the kernel preload off this way: the tool reports the
// preload's probes as failed CUDA calls). A probe kernel reports what its process sees.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "gauntlet/build/builder.h"
#include "gauntlet/sandbox/sandbox.h"
#include "probe_case.h"

namespace gauntlet {
namespace {

const char* kProbe = R"CPP(#include <torch/torch.h>
#include <cstdlib>
#include <cstring>
#include <string>
extern char** environ;
torch::Tensor forward(const torch::Tensor& x) {
  const char* v = getenv("GAUNTLET_CUDA_PRELOAD");
  int n = 0;
  for (char** e = environ; *e; ++e) n += strncmp(*e, "GAUNTLET_CUDA_PRELOAD=", 22) == 0;
  TORCH_CHECK(false, std::string("value=") + (v ? v : "(unset)") + " count=" + std::to_string(n) + ";");
  return x;
}
)CPP";

std::string probe_child(const BuildResult& built, bool zygote, const std::vector<std::string>& extra_env) {
  SandboxOptions o;
  o.use_zygote = zygote;
  o.extra_env = extra_env;
  return run_probe_case(o, built.so_path);
}

TEST(SandboxChildEnvironment, AnExtraSettingReplacesTheOnePassedThrough) {
  const std::string dir = "/tmp/gauntlet-child-env-test-" + std::to_string(getpid());
  ASSERT_EQ(system(("mkdir -p " + dir).c_str()), 0);
  std::ofstream(dir + "/probe.cpp") << kProbe;
  BuildRequest r;
  r.source_path = dir + "/probe.cpp";
  r.entries = {"forward"};
  const BuildResult built = build_kernel(r, default_build_config());
  ASSERT_TRUE(built.ok) << built.error;
  const char* before = std::getenv("GAUNTLET_CUDA_PRELOAD");
  const std::string saved = before ? before : "";
  ::setenv("GAUNTLET_CUDA_PRELOAD", "1", 1);
  // Passed through alone (both launch paths), then replaced in a fork+exec'd child, as the
  // sanitizer's children are started.
  const std::string zygote = probe_child(built, true, {});
  const std::string exec = probe_child(built, false, {});
  const std::string replaced = probe_child(built, false, {"GAUNTLET_CUDA_PRELOAD=0"});
  if (before) ::setenv("GAUNTLET_CUDA_PRELOAD", saved.c_str(), 1);
  else ::unsetenv("GAUNTLET_CUDA_PRELOAD");
  EXPECT_NE(zygote.find("value=1 count=1;"), std::string::npos) << zygote;
  EXPECT_NE(exec.find("value=1 count=1;"), std::string::npos) << exec;
  EXPECT_NE(replaced.find("value=0 count=1;"), std::string::npos) << replaced;
  (void)!system(("rm -rf " + dir).c_str());
}

}  // namespace
}  // namespace gauntlet
