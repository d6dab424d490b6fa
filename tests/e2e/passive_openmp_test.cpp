// End to end: the gauntlet process runs its OpenMP teams with sleeping idle threads
// (src/main/passive_openmp.cpp), unless the caller chose a wait policy, and the report says which.
#include <gtest/gtest.h>

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "e2e_util.h"

using namespace gauntlet::e2e;

namespace {

const std::string kRelu = GAUNTLET_SOURCE_DIR "/corpus/controls/relu.json";

std::string wait_policy_of_a_run() {
  const std::string dir = temp_dir();
  const RunResult r = run_gauntlet({"verify", kRelu, "--gates", "contract", "--seed", "3", "--json", dir + "/r.json"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(read_file(dir + "/r.json"), nullptr, false);
  if (!j.is_object() || !j.contains("environment")) return "no report";
  return j["environment"].value("openmp_wait_policy", "absent");
}

// Fails without the early setenv: the OpenMP runtime would keep its default and the report would say so.
TEST(PassiveOpenmp, WithoutACallersPolicyTheProcessRunsPassive) {
  unsetenv("OMP_WAIT_POLICY");
  EXPECT_EQ(wait_policy_of_a_run(), "PASSIVE");
}

// What the OpenMP runtime itself read when it loaded (OMP_DISPLAY_ENV, printed by libgomp's
// constructor): a spin count of 0 is PASSIVE. Fails with the variable set in main instead of before
// the libraries' constructors.
TEST(PassiveOpenmp, TheRuntimeReadsPassiveWhenItLoads) {
  unsetenv("OMP_WAIT_POLICY");
  setenv("OMP_DISPLAY_ENV", "VERBOSE", 1);
  const RunResult r = run_gauntlet({"--version"});
  unsetenv("OMP_DISPLAY_ENV");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  if (r.err.find("GOMP_SPINCOUNT") == std::string::npos)
    GTEST_SKIP() << "this LibTorch's OpenMP runtime is not libgomp (no GOMP_SPINCOUNT in OMP_DISPLAY_ENV)";
  EXPECT_NE(r.err.find("GOMP_SPINCOUNT = '0'"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("GOMP_SPINCOUNT = '300000'"), std::string::npos) << r.err;
}

TEST(PassiveOpenmp, ACallersPolicyIsKept) {
  setenv("OMP_WAIT_POLICY", "ACTIVE", 1);
  EXPECT_EQ(wait_policy_of_a_run(), "ACTIVE");
  unsetenv("OMP_WAIT_POLICY");
}

}  // namespace
