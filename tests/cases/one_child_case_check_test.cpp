// Tests of OneChildCaseCheck: one child judged case by case, and a search that stops at the first
// case whose child died (it would cost a fresh child per shrinking step).
#include <gtest/gtest.h>

#include <functional>

#include "gauntlet/cases/property.h"
#include "../gates/real_run.h"

using namespace gauntlet;
using gauntlet::testing::CorpusKernelRun;

namespace {

Case relu_case(const CaseSpace& space, int64_t n) {
  Case c;
  std::string why;
  EXPECT_TRUE(space.build({{"N", n}}, 0, {}, DType::Float32, Distribution::Normal, 7, &c, &why)) << why;
  return c;
}

// A judge that counts the runs it saw and fails any run whose call did not return outputs.
struct CountingJudge {
  int runs = 0;
  GateVerdict operator()(const CaseRun& run) {
    ++runs;
    GateVerdict v;
    v.name = "one-child-test";
    if (run.outcome.kind != Outcome::Kind::Ok) {
      v.status = Status::Error;
      v.category = Category::Crash;
      v.message = run.outcome.message;
    }
    return v;
  }
};

TEST(OneChildCaseCheck, EveryCaseOfAKernelThatWorksIsRunAndJudged) {
  CorpusKernelRun k("controls/relu.json", 5, "one-child");
  CountingJudge judge;
  OneChildCaseCheck check(*k.ctx, "one-child-test", std::ref(judge));
  for (int64_t n : {1, 8, 33}) EXPECT_EQ(check(relu_case(*k.space, n)).status, Status::Pass) << n;
  EXPECT_EQ(judge.runs, 3);
  EXPECT_EQ(check.last_failure(), nullptr);
}

TEST(OneChildCaseCheck, ACaseWhoseChildDiedEndsTheSearchAndKeepsItsRunForTheReplay) {
  CorpusKernelRun k("hostile/segfault.json", 5, "one-child");
  CountingJudge judge;
  OneChildCaseCheck check(*k.ctx, "one-child-test", std::ref(judge));
  const GateVerdict first = check(relu_case(*k.space, 8));
  EXPECT_EQ(first.status, Status::Error);
  ASSERT_NE(check.last_failure(), nullptr);
  EXPECT_EQ(check.last_failure()->outcome.kind, Outcome::Kind::Died);
  EXPECT_EQ(check.last_failure()->c.label, relu_case(*k.space, 8).label);
  // Later cases count as passing without a child or a judgement, which ends RapidCheck's
  // shrinking; the failing run stays the one kept.
  for (int64_t n : {1, 2}) EXPECT_EQ(check(relu_case(*k.space, n)).status, Status::Pass) << n;
  EXPECT_EQ(judge.runs, 1);
  EXPECT_EQ(check.last_failure()->c.label, relu_case(*k.space, 8).label);
}

}  // namespace
