// End to end: timing's sets made while the correctness gates run (Gate::prepare_ahead,
// GAUNTLET_PREPARE_AHEAD), through the real binary: used when on, off on the CPU by default, and a
// kernel that fails a correctness gate still ends with timing skipped.
#include <gtest/gtest.h>

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "e2e_util.h"

using namespace gauntlet::e2e;

namespace {

const std::string kRelu = GAUNTLET_SOURCE_DIR "/corpus/controls/relu.json";

// Sets the variable for one run and restores its absence after.
struct PrepareAhead {
  explicit PrepareAhead(const char* value) {
    if (value) setenv("GAUNTLET_PREPARE_AHEAD", value, 1);
    else unsetenv("GAUNTLET_PREPARE_AHEAD");
  }
  ~PrepareAhead() { unsetenv("GAUNTLET_PREPARE_AHEAD"); }
};

const nlohmann::json& first_dtype_of_timing(const Verified& v) {
  static const nlohmann::json none;
  const nlohmann::json& timing = report_gate(v.report, "timing");
  if (!timing.is_object() || !timing.contains("evidence") || !timing["evidence"].contains("dtypes")) return none;
  return timing["evidence"]["dtypes"][0];
}

// Fails if the runner no longer starts timing's preparation, or timing no longer takes from it.
TEST(PrepareAhead, OnTimingTakesEverySetMadeWhileTheOtherGatesRan) {
  PrepareAhead on("1");
  const Verified v = verify_report({kRelu, "--gates", "contract,accuracy,timing"});
  ASSERT_EQ(v.exit_code, 0) << v.log;
  const nlohmann::json& d = first_dtype_of_timing(v);
  ASSERT_TRUE(d.is_object()) << v.report.dump();
  EXPECT_EQ(d["prepared_ahead"]["sets"], d["input_sets"]) << d.dump();
  EXPECT_GT(d["prepared_ahead"]["sets"].get<int>(), 0) << d.dump();
}

// The default on the CPU: the correctness gates' children want the cores, so nothing is made ahead.
TEST(PrepareAhead, OffForACpuKernelByDefault) {
  PrepareAhead unset(nullptr);
  const Verified v = verify_report({kRelu, "--gates", "contract,timing"});
  ASSERT_EQ(v.exit_code, 0) << v.log;
  const nlohmann::json& d = first_dtype_of_timing(v);
  ASSERT_TRUE(d.is_object()) << v.report.dump();
  EXPECT_EQ(d["prepared_ahead"]["sets"].get<int>(), 0) << d.dump();
}

// A kernel that fails accuracy: timing is skipped (its preparation stopped and waited for), the
// verdict is the kernel's failure, and the process ends.
TEST(PrepareAhead, AFailingKernelSkipsTimingWithItsPreparationInFlight) {
  PrepareAhead on("1");
  const Verified v = verify_report({GAUNTLET_SOURCE_DIR "/corpus/bugs/accuracy/gelu_erf_saturate.json", "--gates",
                                    "accuracy,timing"});
  EXPECT_EQ(v.exit_code, 1) << v.log;
  EXPECT_EQ(report_gate(v.report, "accuracy")["status"], "fail") << v.report.dump();
  EXPECT_EQ(report_gate(v.report, "timing")["status"], "skip") << v.report.dump();
}

}  // namespace
