// A crash, timeout or protocol violation stands only when its deciding case fails again.
#include <gtest/gtest.h>

#include "gauntlet/cases/confirm.h"

using namespace gauntlet;

namespace {

GateVerdict verdict(Status s, Category c, const std::string& message) {
  GateVerdict v;
  v.name = "shapes";
  v.status = s;
  v.category = c;
  v.message = message;
  return v;
}

}  // namespace

TEST(Confirm, OnlyCrashesAndTimeoutsNeedConfirming) {
  EXPECT_TRUE(needs_confirmation(verdict(Status::Error, Category::Crash, "killed by SIGSEGV")));
  EXPECT_TRUE(needs_confirmation(verdict(Status::Error, Category::Crash, "protocol violation: malformed case reply (x)")));
  EXPECT_TRUE(needs_confirmation(verdict(Status::Error, Category::Timeout, "no reply")));
  EXPECT_FALSE(needs_confirmation(verdict(Status::Fail, Category::WrongResult, "off by one")));
  EXPECT_FALSE(needs_confirmation(verdict(Status::Error, Category::RuntimeError, "threw")));
  EXPECT_FALSE(needs_confirmation(verdict(Status::Pass, Category::None, "")));
}

TEST(Confirm, AFailureThatDoesNotRecurIsAHarnessErrorWithBothOutcomes) {
  const GateVerdict first = verdict(Status::Error, Category::Crash, "protocol violation: malformed case reply (y)");
  int runs = 0;
  const GateVerdict v = confirm_failure(first, [&] {
    ++runs;
    return verdict(Status::Pass, Category::None, "");
  });
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(v.status, Status::HarnessError);
  EXPECT_EQ(v.category, Category::HarnessError);
  EXPECT_NE(v.message.find("did not recur"), std::string::npos) << v.message;
  EXPECT_EQ(v.evidence.at("first").at("category"), "crash");
  EXPECT_EQ(v.evidence.at("first").at("message"), first.message);
  EXPECT_EQ(v.evidence.at("again").at("status"), "pass");
  // Recurring as another kind of failure is not a recurrence either.
  const GateVerdict w = confirm_failure(first, [] { return verdict(Status::Error, Category::Timeout, "no reply"); });
  EXPECT_EQ(w.status, Status::HarnessError);
  EXPECT_EQ(w.evidence.at("again").at("category"), "timeout");
}

TEST(Confirm, AFailureThatRecursStandsWithTheSecondOutcome) {
  const GateVerdict first = verdict(Status::Error, Category::Crash, "killed by SIGSEGV");
  const GateVerdict v = confirm_failure(first, [] { return verdict(Status::Error, Category::Crash, "killed by SIGSEGV"); });
  EXPECT_EQ(v.status, Status::Error);
  EXPECT_EQ(v.category, Category::Crash);
  EXPECT_EQ(v.message, first.message);
  EXPECT_EQ(v.evidence.at("confirmed").at("again").at("message"), "killed by SIGSEGV");
}
