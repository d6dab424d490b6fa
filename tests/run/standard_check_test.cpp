// The standard check beside gauntlet: its stored form, the 2x2 (3x2 with unsafe) it makes with the
// kernel verdicts, and the summary's lines with the flagged kernels (standard rejects, gauntlet passes).
#include "gauntlet/run/standard_check.h"

#include <gtest/gtest.h>

using nlohmann::json;

namespace {

json record(const std::string& entry, const std::string& verdict, const std::string& check) {
  json r = {{"entry", entry}, {"verdict", verdict}, {"gates", json::array()}, {"complete", verdict != "incomplete"}};
  if (!check.empty()) r["standard_check"] = {{"verdict", check}, {"reason", entry + " said " + check}, {"check", "kbcheck"}};
  return r;
}

// One kernel in every cell, two in some, and the records the table leaves out.
json records() {
  return json::array({
      record("pass-accept.json", "pass", "accept"),
      record("pass-reject.json", "pass", "reject"),
      record("unsafe-accept.json", "unsafe", "accept"),
      record("fail-accept.json", "fail", "accept"),
      record("error-accept.json", "error", "accept"),
      record("fail-reject.json", "fail", "reject"),
      record("pass-reject-2.py", "pass", "reject"),
      record("check-error.json", "fail", "error"),
      record("no-check.json", "pass", ""),
      record("incomplete.json", "incomplete", "accept"),
      {{"entry", "broken.json"}, {"verdict", "error"}, {"entry_error", "malformed JSON"}},
      "not a record",
  });
}

}  // namespace

TEST(StandardCheck, JsonRoundTripsAndRefusesUnknownVerdicts) {
  gauntlet::StandardCheck c{"reject", "trial 2: output mismatch", "kernelbench", 1.25};
  auto back = gauntlet::standard_check_from_json(gauntlet::standard_check_to_json(c));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->verdict, "reject");
  EXPECT_EQ(back->reason, c.reason);
  EXPECT_EQ(back->check, "kernelbench");
  EXPECT_DOUBLE_EQ(back->seconds, 1.25);
  EXPECT_EQ(back->children, 0);
  EXPECT_FALSE(gauntlet::standard_check_to_json(c).contains("children")) << "no child, no count (the older stored form)";
  // The child it started and that child's CUDA hardware queues, what throughput_summary.py prices.
  c.children = 1;
  c.hardware_queues = 2;
  back = gauntlet::standard_check_from_json(gauntlet::standard_check_to_json(c));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->children, 1);
  EXPECT_EQ(back->hardware_queues, 2u);
  EXPECT_FALSE(gauntlet::standard_check_from_json({{"verdict", "maybe"}}));
  EXPECT_FALSE(gauntlet::standard_check_from_json({{"reason", "no verdict"}}));
  EXPECT_FALSE(gauntlet::standard_check_from_json(json("accept")));
  EXPECT_FALSE(gauntlet::standard_check_from_json(nullptr));
}

TEST(StandardCheck, TableCountsTheStandardCheckAgainstGauntletsVerdicts) {
  const json t = gauntlet::standard_check_table(records());
  EXPECT_EQ(t["accept"], json({{"pass", 1}, {"unsafe", 1}, {"fail", 2}})) << "fail and error share a column";
  EXPECT_EQ(t["reject"], json({{"pass", 2}, {"unsafe", 0}, {"fail", 1}}));
  EXPECT_EQ(t["compared"], 7);
  EXPECT_EQ(t["check_error"], 1);
  EXPECT_EQ(t["not_run"], 1) << "incomplete kernels and broken entries are in no count";
  ASSERT_EQ(t["flagged"].size(), 2u);
  EXPECT_EQ(t["flagged"][0], json({{"label", "pass-reject.json"}, {"reason", "pass-reject.json said reject"}}));
  EXPECT_EQ(t["flagged"][1]["label"], "pass-reject-2.py");
  EXPECT_TRUE(gauntlet::standard_check_flags(records()[1]));
  EXPECT_FALSE(gauntlet::standard_check_flags(records()[0]));
  EXPECT_FALSE(gauntlet::standard_check_flags(records()[5])) << "both reject: they agree";
  // Nothing to count: zeros, not a missing key.
  const json empty = gauntlet::standard_check_table(json::array());
  EXPECT_EQ(empty["reject"]["pass"], 0);
  EXPECT_EQ(empty["compared"], 0);
}

TEST(StandardCheck, LinesShowTheTableThenTheFlaggedKernels) {
  const std::vector<std::string> lines = gauntlet::standard_check_lines(gauntlet::standard_check_table(records()));
  ASSERT_EQ(lines.size(), 8u);
  EXPECT_EQ(lines[0].rfind("standard check against gauntlet (7 kernels;", 0), 0u) << lines[0];
  char row[128];
  std::snprintf(row, sizeof row, "  %-18s %8s %8s %12s", "", "pass", "unsafe", "fail/error");
  EXPECT_EQ(lines[1], row);
  std::snprintf(row, sizeof row, "  %-18s %8d %8d %12d", "standard accepts", 1, 1, 2);
  EXPECT_EQ(lines[2], row);
  std::snprintf(row, sizeof row, "  %-18s %8d %8d %12d", "standard rejects", 2, 0, 1);
  EXPECT_EQ(lines[3], row);
  EXPECT_EQ(lines[4], "  not in the table: 1 kernels whose standard check could not run (error); 1 kernels without one");
  EXPECT_EQ(lines[5], "standard check rejects, gauntlet passes (2): each a gauntlet false negative or a false alarm of the "
                      "standard check:");
  EXPECT_EQ(lines[6], "  FLAGGED pass-reject.json: pass-reject.json said reject");
  EXPECT_EQ(lines[7], "  FLAGGED pass-reject-2.py: pass-reject-2.py said reject");
  // Records without any standard check (an audit run with --no-standard-check): no lines at all.
  EXPECT_TRUE(gauntlet::standard_check_lines(gauntlet::standard_check_table(json::array({record("a", "pass", "")})))
                  .empty());
  // A table from elsewhere (a report's JSON) that lacks keys is read as zeros, never thrown on.
  EXPECT_TRUE(gauntlet::standard_check_lines(json::object()).empty());
}
