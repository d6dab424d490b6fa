// The audit's summary table: verdict counts, per-gate counts, unsafe kernels apart, root causes, the standard check.
#include "../../src/audit/audit_progress.h"
#include "gauntlet/run/root_cause.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

using nlohmann::json;

namespace {

std::string summary_text(const json& records) {
  char* buf = nullptr;
  size_t size = 0;
  std::FILE* out = open_memstream(&buf, &size);
  gauntlet::print_audit_summary(records, {}, out);
  std::fclose(out);
  std::string text(buf, size);
  std::free(buf);
  return text;
}

json gate(const std::string& name, const std::string& status, const json& scope = nullptr) {
  return {{"name", name}, {"status", status}, {"category", status == "fail" ? "wrong-result" : ""}, {"scope", scope}};
}

}  // namespace

TEST(AuditSummary, UnsafeKernelsAndOutOfContractGatesCountApart) {
  const json records = json::array({
      {{"entry", "a.json"}, {"verdict", "pass"}, {"gates", json::array({gate("layouts", "pass", "in-contract")})}},
      {{"entry", "b.json"}, {"verdict", "unsafe"}, {"gates", json::array({gate("layouts", "fail", "out-of-contract")})}},
      // Stored before gates had scopes: its failure is in-contract.
      {{"entry", "c.json"}, {"verdict", "fail"}, {"gates", json::array({{{"name", "layouts"}, {"status", "fail"}}})}},
  });
  const std::string text = summary_text(records);
  EXPECT_NE(text.find("verdicts: pass 1, unsafe 1, fail 1\n"), std::string::npos) << text;
  char row[128];
  std::snprintf(row, sizeof row, "  %-15s %6d %6d %6d %8d %6d %8d\n", "layouts", 1, 2, 0, 0, 0, 1);
  EXPECT_NE(text.find(row), std::string::npos) << "fail 2, of them outside the contract 1:\n" << text;
  EXPECT_NE(text.find("outside: of fail and error"), std::string::npos) << text;
  EXPECT_NE(text.find("  b.json: unsafe: layouts fail (wrong-result, out-of-contract)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  c.json: fail: layouts fail\n"), std::string::npos) << text;
}

// A failing kernel leads with its one root cause line (root_cause.h), its failing gates on the line
// after; a record from before root causes keeps its gates on its first line.
TEST(AuditSummary, RootCauseLeadsEachFailingKernel) {
  const json cause = {{"gate", "shapes"},     {"scope", "in-contract"}, {"case", "float32 [3, 5]"},
                      {"elements", 15},       {"diagnosis", nullptr},   {"text", "reads N from A.size(0)"},
                      {"gates", {"shapes", "accuracy"}}, {"other_gates", {"memory"}}};
  const json records = json::array({
      {{"entry", "m.json"},
       {"verdict", "fail"},
       {"root_cause", cause},
       {"gates", json::array({gate("accuracy", "fail", "in-contract"), gate("shapes", "fail", "in-contract"),
                              gate("memory", "error", "in-contract")})}},
      {{"entry", "old.json"}, {"verdict", "fail"}, {"gates", json::array({gate("accuracy", "fail")})}},
  });
  const std::string text = summary_text(records);
  const std::string lead = "  m.json: fail: " + gauntlet::root_cause_line(cause) + "\n";
  EXPECT_NE(text.find(lead), std::string::npos) << text;
  EXPECT_NE(text.find(lead + "    gates: accuracy fail (wrong-result), shapes fail (wrong-result), memory error\n"),
            std::string::npos)
      << text;
  EXPECT_NE(gauntlet::root_cause_line(cause).find("the same cause fails 2 gates: shapes, accuracy"), std::string::npos);
  EXPECT_NE(text.find("  old.json: fail: accuracy fail (wrong-result)\n"), std::string::npos) << text;
}

// The standard check against gauntlet: the 2x2 (3x2 with unsafe) and, before the list of kernels
// not passing, the kernels the standard check rejects and gauntlet passes.
TEST(AuditSummary, StandardCheckTableAndFlaggedKernelsComeBeforeTheList) {
  auto with_check = [](json r, const std::string& verdict, const std::string& reason) {
    r["standard_check"] = {{"verdict", verdict}, {"reason", reason}, {"check", "kernelbench"}, {"seconds", 0.2}};
    return r;
  };
  const json records = json::array({
      with_check({{"entry", "ok.py"}, {"verdict", "pass"}, {"gates", json::array({gate("accuracy", "pass")})}}, "accept",
                 "5 trials"),
      with_check({{"entry", "bug.json"}, {"verdict", "fail"}, {"gates", json::array({gate("accuracy", "fail")})}},
                 "accept", "5 trials"),
      with_check({{"entry", "odd.py"}, {"verdict", "pass"}, {"gates", json::array({gate("accuracy", "pass")})}},
                 "reject", "trial 3: output mismatch"),
  });
  const std::string text = summary_text(records);
  char row[128];
  std::snprintf(row, sizeof row, "  %-18s %8d %8d %12d\n", "standard accepts", 1, 0, 1);
  EXPECT_NE(text.find(row), std::string::npos) << text;
  std::snprintf(row, sizeof row, "  %-18s %8d %8d %12d\n", "standard rejects", 1, 0, 0);
  EXPECT_NE(text.find(row), std::string::npos) << text;
  const size_t flagged = text.find("  FLAGGED odd.py: trial 3: output mismatch\n");
  ASSERT_NE(flagged, std::string::npos) << text;
  EXPECT_LT(flagged, text.find("not passing (1):")) << "the flagged kernels are listed first";
  // Without standard checks, none of it.
  EXPECT_EQ(summary_text(json::array({{{"entry", "a"}, {"verdict", "pass"}, {"gates", json::array()}}})).find("standard"),
            std::string::npos);
}
