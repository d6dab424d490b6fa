// GAUNTLET_GPU_TURN_SLOTS (how many cases share the GPU beside an overrunning child): a bad value is
// one line naming it and exit 2 before anything runs, for verify and audit alike; a good one runs.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "e2e_util.h"

namespace gauntlet::e2e {
namespace {

const std::string kCorpus = source_dir() + "/corpus";

struct ScopedEnv {
  explicit ScopedEnv(const char* value) { setenv("GAUNTLET_GPU_TURN_SLOTS", value, 1); }
  ~ScopedEnv() { unsetenv("GAUNTLET_GPU_TURN_SLOTS"); }
};

TEST(GpuTurnSlotsEnv, ABadValueIsOneLineAndExitTwoBeforeAnythingRuns) {
  for (const char* bad : {"0", "17", "four", "8x"}) {
    ScopedEnv env(bad);
    for (const std::string& command : {std::string("verify"), std::string("audit")}) {
      std::vector<std::string> args = {command, kCorpus + "/controls/relu.json"};
      const std::string db = temp_dir() + "/slots.db";
      if (command == "audit") args.insert(args.end(), {"--db", db});
      RunResult r = run_gauntlet(args, 120);
      EXPECT_EQ(r.exit_code, 2) << command << " " << bad << ": " << r.out << r.err;
      EXPECT_NE(r.err.find("GAUNTLET_GPU_TURN_SLOTS='" + std::string(bad) + "'"), std::string::npos) << r.err;
      EXPECT_NE(r.err.find("from 1 to 16"), std::string::npos) << r.err;
      EXPECT_EQ(r.out.find("pass"), std::string::npos) << "a gate ran: " << r.out;
    }
  }
}

TEST(GpuTurnSlotsEnv, AGoodValueRuns) {
  ScopedEnv env("1");
  RunResult r = run_gauntlet({"verify", kCorpus + "/controls/relu.json", "--gates", "contract", "--quiet"}, 300);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

// The two host-wide slot counts (gpu_slots.h): start slots 0-16, gate slots 0-64.
void bad_values_are_one_line_and_exit_two_and_a_good_one_runs(const char* name, std::vector<const char*> bad_values,
                                                                const char* good) {
  for (const char* bad : bad_values) {
    setenv(name, bad, 1);
    RunResult r = run_gauntlet({"verify", kCorpus + "/controls/relu.json"}, 120);
    unsetenv(name);
    EXPECT_EQ(r.exit_code, 2) << name << "=" << bad << ": " << r.out << r.err;
    EXPECT_NE(r.err.find(std::string(name) + "='" + bad + "'"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("pass"), std::string::npos) << "a gate ran: " << r.out;
  }
  setenv(name, good, 1);
  RunResult r = run_gauntlet({"verify", kCorpus + "/controls/relu.json", "--gates", "contract", "--quiet"}, 300);
  unsetenv(name);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST(GpuStartSlotsEnv, ABadValueIsOneLineAndExitTwoAndAGoodOneRuns) {
  bad_values_are_one_line_and_exit_two_and_a_good_one_runs("GAUNTLET_GPU_START_SLOTS", {"-1", "17", "two"}, "2");
}

TEST(GpuGateSlotsEnv, ABadValueIsOneLineAndExitTwoAndAGoodOneRuns) {
  bad_values_are_one_line_and_exit_two_and_a_good_one_runs("GAUNTLET_GPU_GATE_SLOTS", {"-1", "65", "16 "}, "16");
}

}  // namespace
}  // namespace gauntlet::e2e
