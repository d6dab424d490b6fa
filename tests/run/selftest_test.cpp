// Tests of the selftest's comparison of a kernel's report with its manifest's "expect" record.
#include <gtest/gtest.h>

#include "gauntlet/run/selftest.h"

using namespace gauntlet;

namespace {

GateVerdict gate(const std::string& name, Status s, Category c = Category::None) {
  GateVerdict v;
  v.name = name;
  v.status = s;
  v.category = c;
  v.message = "m";
  return v;
}

KernelReport report(const std::string& verdict, std::vector<GateVerdict> gates) {
  KernelReport r;
  r.verdict = verdict;
  r.gates = std::move(gates);
  return r;
}

TEST(SelftestExpectations, ControlMustPassOrSkipEveryGate) {
  const nlohmann::json expect = {{"verdict", "pass"}};
  EXPECT_TRUE(check_expectations(expect, report("pass", {gate("accuracy", Status::Pass), gate("gradients", Status::Skip)})).empty());
  const auto bad = check_expectations(expect, report("fail", {gate("accuracy", Status::Fail, Category::WrongResult)}));
  ASSERT_EQ(bad.size(), 2u);  // the verdict and the gate
  EXPECT_NE(bad[1].find("accuracy fail"), std::string::npos) << bad[1];
}

TEST(SelftestExpectations, DeclaredGateMustFailWithItsCategory) {
  const nlohmann::json expect = {{"verdict", "fail"},
                                 {"gates", {{"provenance", {{"status", "fail"}, {"category", "wrong-result"}}}}}};
  EXPECT_TRUE(check_expectations(expect, report("fail", {gate("accuracy", Status::Pass),
                                                         gate("provenance", Status::Fail, Category::WrongResult)}))
                  .empty());
  // Caught by the wrong gate only: two mismatches (provenance passed, accuracy failed unannounced).
  EXPECT_EQ(check_expectations(expect, report("fail", {gate("accuracy", Status::Fail, Category::WrongResult),
                                                       gate("provenance", Status::Pass)}))
                .size(),
            2u);
  EXPECT_EQ(check_expectations(expect, report("fail", {gate("provenance", Status::Fail, Category::Crash)})).size(), 1u);
}

// A gate whose outcome on the bug the allocator decides lists both; anything else still fails.
TEST(SelftestExpectations, AListOfStatusesAcceptsAnyOfThem) {
  const nlohmann::json expect = {
      {"verdict", "fail"},
      {"gates", {{"memory", {{"status", "fail"}, {"category", "wrong-result"}}},
                 {"statelessness", {{"status", {"fail", "pass"}}, {"category", "wrong-result"}}}}}};
  for (Status st : {Status::Fail, Status::Pass})
    EXPECT_TRUE(check_expectations(expect, report("fail", {gate("memory", Status::Fail, Category::WrongResult),
                                                           gate("statelessness", st, Category::WrongResult)}))
                    .empty());
  EXPECT_EQ(check_expectations(expect, report("fail", {gate("memory", Status::Fail, Category::WrongResult),
                                                       gate("statelessness", Status::Error, Category::Crash)}))
                .size(),
            1u);
  EXPECT_EQ(check_expectations(expect, report("fail", {gate("memory", Status::Fail, Category::WrongResult),
                                                       gate("statelessness", Status::Fail, Category::Crash)}))
                .size(),
            1u);
}

TEST(SelftestExpectations, StarRuleCoversGatesThatRanTheKernelNotOnesThatSkipped) {
  const nlohmann::json expect = {{"verdict", "error"}, {"gates", {{"*", {{"status", "error"}, {"category", "crash"}}}}}};
  EXPECT_TRUE(check_expectations(expect, report("error", {gate("accuracy", Status::Error, Category::Crash),
                                                          gate("gradients", Status::Skip),
                                                          gate("accumulation", Status::Skip)}))
                  .empty());
  EXPECT_EQ(check_expectations(expect, report("error", {gate("accuracy", Status::Error, Category::Crash),
                                                        gate("memory", Status::Pass)}))
                .size(),
            1u);
}

}  // namespace
