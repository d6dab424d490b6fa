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

// A probe kernel that reports what its process sees of variable NAME.
std::string probe_source(const std::string& name) {
  return R"CPP(#include <torch/torch.h>
#include <cstdlib>
#include <cstring>
#include <string>
extern char** environ;
torch::Tensor forward(const torch::Tensor& x) {
  const char* name = ")CPP" + name + R"CPP(";
  const char* v = getenv(name);
  const std::string prefix = std::string(name) + "=";
  int n = 0;
  for (char** e = environ; *e; ++e) n += strncmp(*e, prefix.c_str(), prefix.size()) == 0;
  TORCH_CHECK(false, std::string("value=") + (v ? v : "(unset)") + " count=" + std::to_string(n) + ";");
  return x;
}
)CPP";
}

BuildResult build_probe(const std::string& dir, const std::string& name) {
  std::ofstream(dir + "/probe.cpp") << probe_source(name);
  BuildRequest r;
  r.source_path = dir + "/probe.cpp";
  r.entries = {"forward"};
  return build_kernel(r, default_build_config());
}

// Sets `name` to `value` for the scope, then puts back what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* before = std::getenv(name);
    had_ = before != nullptr;
    if (had_) saved_ = before;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_) ::setenv(name_, saved_.c_str(), 1);
    else ::unsetenv(name_);
  }

 private:
  const char* name_;
  bool had_ = false;
  std::string saved_;
};

std::string probe_child(const BuildResult& built, bool zygote, const std::vector<std::string>& extra_env) {
  SandboxOptions o;
  o.use_zygote = zygote;
  o.extra_env = extra_env;
  return run_probe_case(o, built.so_path);
}

TEST(SandboxChildEnvironment, AnExtraSettingReplacesTheOnePassedThrough) {
  const std::string dir = "/tmp/gauntlet-child-env-test-" + std::to_string(getpid());
  ASSERT_EQ(system(("mkdir -p " + dir).c_str()), 0);
  const BuildResult built = build_probe(dir, "GAUNTLET_CUDA_PRELOAD");
  ASSERT_TRUE(built.ok) << built.error;
  std::string zygote, exec, replaced;
  {
    const ScopedEnv preload("GAUNTLET_CUDA_PRELOAD", "1");
    // Passed through alone (both launch paths), then replaced in a fork+exec'd child, as the
    // sanitizer's children are started.
    zygote = probe_child(built, true, {});
    exec = probe_child(built, false, {});
    replaced = probe_child(built, false, {"GAUNTLET_CUDA_PRELOAD=0"});
  }
  EXPECT_NE(zygote.find("value=1 count=1;"), std::string::npos) << zygote;
  EXPECT_NE(exec.find("value=1 count=1;"), std::string::npos) << exec;
  EXPECT_NE(replaced.find("value=0 count=1;"), std::string::npos) << replaced;
  (void)!system(("rm -rf " + dir).c_str());
}

// The staging knob reaches the CUDA worker through both launch paths (it is read in the child).
TEST(SandboxChildEnvironment, ThePageableStagingKnobReachesTheChild) {
  const std::string dir = "/tmp/gauntlet-child-env-staging-test-" + std::to_string(getpid());
  ASSERT_EQ(system(("mkdir -p " + dir).c_str()), 0);
  const BuildResult built = build_probe(dir, "GAUNTLET_PAGEABLE_STAGING");
  ASSERT_TRUE(built.ok) << built.error;
  std::string zygote, exec;
  {
    const ScopedEnv staging("GAUNTLET_PAGEABLE_STAGING", "1");
    zygote = probe_child(built, true, {});
    exec = probe_child(built, false, {});
  }
  const std::string unset = probe_child(built, false, {});
  EXPECT_NE(zygote.find("value=1 count=1;"), std::string::npos) << zygote;
  EXPECT_NE(exec.find("value=1 count=1;"), std::string::npos) << exec;
  EXPECT_NE(unset.find("value=(unset) count=0;"), std::string::npos) << unset;
  (void)!system(("rm -rf " + dir).c_str());
}

}  // namespace
}  // namespace gauntlet
