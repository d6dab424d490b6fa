// End to end: the timing gate for KernelBench-style Python modules (docs/modules.md, "Timing";
// docs/timing.md). The Python worker answers Time and Peaks frames like the native worker; a
// module is timed against eager Model, torch.compile(Model) where torch has it, and the library
// op when the module is mapped to an op schema. A module whose timed outputs differ from its
// verified output is caught by the re-check. Skipped, with the reason, where python3 or its torch
// is missing.
#include <gtest/gtest.h>

#include <string>
#include <nlohmann/json.hpp>

#include "e2e_util.h"

using namespace gauntlet;
using namespace gauntlet::e2e;

namespace {

const std::string kModules = source_dir() + "/corpus/modules";

const nlohmann::json* baseline(const nlohmann::json& dtype_evidence, const std::string& name) {
  for (const auto& b : dtype_evidence["baselines"])
    if (b["name"] == name) return &b;
  return nullptr;
}

// Every baseline either ran (a median > 0 and a speedup) or says why not; torch.compile(Model)
// cannot run here (Debian's torch 1.13 has no torch.compile; a CPU child may not exec a compiler).
void expect_compiled_baseline_explained(const nlohmann::json& d) {
  const nlohmann::json* c = baseline(d, "torch.compile(Model)");
  ASSERT_NE(c, nullptr) << d.dump(1);
  EXPECT_EQ((*c)["op"], "module:compiled");
  if (c->contains("median_ms")) {
    EXPECT_GT((*c)["median_ms"].get<double>(), 0);
  } else {
    const std::string why = (*c)["error"];
    EXPECT_NE(why.find("torch.compile"), std::string::npos) << why;
  }
}

// A correct schema-mapped module passes all thirteen gates; the timing gate's evidence has the
// candidate's median and every baseline's: eager Model (the primary "baseline"), ATen softmax and
// torch.compile(Model) (or why it did not run).
TEST(ModuleTiming, CorrectMappedModulePassesAgainstEveryBaseline) {
  REQUIRE_PYTHON_TORCH();
  const Verified r = verify_report({kModules + "/softmax_module.json"});
  ASSERT_TRUE(r.report.is_object()) << r.log;
  EXPECT_EQ(r.exit_code, 0) << r.report.dump(1);
  EXPECT_EQ(r.report["verdict"], "pass");
  const nlohmann::json& t = report_gate(r.report, "timing");
  ASSERT_EQ(t["status"], "pass") << t.dump(1);
  const nlohmann::json& d = t["evidence"]["dtypes"][0];
  EXPECT_EQ(d["timer"], "steady-clock");
  EXPECT_GT(d["candidate"]["median_ms"].get<double>(), 0) << d.dump(1);
  EXPECT_GE(d["candidate"]["n"].get<int>(), 20) << d.dump(1);  // two runs of at least 10 timed calls
  EXPECT_EQ(d["baseline"]["name"], "eager Model") << d.dump(1);
  EXPECT_GT(d["baseline"]["median_ms"].get<double>(), 0);
  EXPECT_GT(d["speedup"].get<double>(), 0);
  EXPECT_GT(d["peaks"]["copy_bytes_per_s"].get<double>(), 0);
  EXPECT_GT(d["roofline"]["seconds"].get<double>(), 0);
  for (const char* name : {"eager Model", "ATen softmax"}) {
    const nlohmann::json* b = baseline(d, name);
    ASSERT_NE(b, nullptr) << name << ": " << d.dump(1);
    EXPECT_GT((*b)["median_ms"].get<double>(), 0) << name;
    EXPECT_GT((*b)["candidate_median_ms"].get<double>(), 0) << name;
    EXPECT_GT((*b)["speedup"].get<double>(), 0) << name;
    EXPECT_GE((*b)["n"].get<int>(), 10) << name;
  }
  EXPECT_EQ((*baseline(d, "ATen softmax"))["op"], "softmax");
  expect_compiled_baseline_explained(d);
  const std::string msg = t["message"];
  EXPECT_NE(msg.find("eager Model"), std::string::npos) << msg;
  EXPECT_NE(msg.find("ATen softmax"), std::string::npos) << msg;
}

// An unmapped module (the module oracle): eager Model and torch.compile(Model), no library op,
// and no physical floor (no cost model).
TEST(ModuleTiming, UnmappedModuleIsTimedAgainstEagerModel) {
  REQUIRE_PYTHON_TORCH();
  const Verified r = verify_report({kModules + "/rmsnorm_module.py", "--gates", "timing"});
  ASSERT_TRUE(r.report.is_object()) << r.log;
  EXPECT_EQ(r.exit_code, 0) << r.report.dump(1);
  const nlohmann::json& t = report_gate(r.report, "timing");
  ASSERT_EQ(t["status"], "pass") << t.dump(1);
  const nlohmann::json& d = t["evidence"]["dtypes"][0];
  EXPECT_GT(d["candidate"]["median_ms"].get<double>(), 0);
  EXPECT_EQ(d["baseline"]["name"], "eager Model");
  EXPECT_GT(d["baseline"]["median_ms"].get<double>(), 0);
  EXPECT_EQ(d["baselines"].size(), 2u) << d.dump(1);  // eager Model, torch.compile(Model)
  expect_compiled_baseline_explained(d);
  EXPECT_TRUE(d["roofline"].contains("note")) << d["roofline"].dump();
}

// The planted timing bug: correct for its first sixteen large calls in a process, then a hot path
// that zero-fills the last partial block. Every correctness gate passes it; the timing gate's
// re-check of every timed output against the verified one fails it.
TEST(ModuleTiming, HotPathModuleIsCaughtByTheRecheck) {
  REQUIRE_PYTHON_TORCH();
  const Verified r = verify_report({kModules + "/relu_hot_path.json"});
  ASSERT_TRUE(r.report.is_object()) << r.log;
  EXPECT_EQ(r.exit_code, 1) << r.report.dump(1);
  EXPECT_EQ(r.report["verdict"], "fail");
  for (const auto& g : r.report["gates"]) {
    if (g["name"] == "timing") continue;
    EXPECT_TRUE(g["status"] == "pass" || g["status"] == "skip") << g.dump(1);
  }
  const nlohmann::json& t = report_gate(r.report, "timing");
  EXPECT_EQ(t["status"], "fail") << t.dump(1);
  EXPECT_EQ(t["category"], "wrong-result");
  const std::string msg = t["message"];
  EXPECT_NE(msg.find("timed calls returned outputs that differ from the same inputs' verified outputs"),
            std::string::npos) << msg;
  EXPECT_NE(msg.find("in the run beside eager Model"), std::string::npos) << msg;
  EXPECT_FALSE(t["replay"].get<std::string>().empty());
}

// Timing runs only after the correctness gates passed: a module failing one is not timed.
TEST(ModuleTiming, SkippedAfterAFailedGate) {
  REQUIRE_PYTHON_TORCH();
  const Verified r = verify_report({kModules + "/softmax_cached.json", "--gates", "statelessness,timing"});
  ASSERT_TRUE(r.report.is_object()) << r.log;
  const nlohmann::json& t = report_gate(r.report, "timing");
  EXPECT_EQ(t["status"], "skip") << t.dump(1);
  EXPECT_NE(t["message"].get<std::string>().find("statelessness"), std::string::npos) << t.dump(1);
}

}  // namespace
