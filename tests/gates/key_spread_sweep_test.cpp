// The shapes sweep reruns its largest case of each dim with every spread of a key domain, so a
// 16-bit run counter (bugs/shapes/unique_count_uint16) meets all-equal keys at N = 65537 whatever
// the seed; the special-values and subnormals gates skip an op with no floating input (unique: int64
// keys only).
#include <gtest/gtest.h>

#include <string>

#include "gauntlet/cases/gate.h"
#include "real_run.h"

using namespace gauntlet;
using gauntlet::testing::CorpusKernelRun;

namespace {

TEST(KeySpreadSweep, TheLargestSweptSizeMeetsAllEqualKeysOnEverySeed) {
  for (uint64_t seed : {1, 3, 4}) {  // seeds whose own draws never put all-equal keys at N >= 65536
    CorpusKernelRun r("bugs/shapes/unique_count_uint16.json", seed, "shapes");
    ASSERT_TRUE(r.build.ok) << r.build.error;
    const GateVerdict v = make_gate("shapes")->run(*r.ctx);
    EXPECT_EQ(v.status, Status::Fail) << seed << ": " << v.message;
    EXPECT_NE(v.message.find("all_equal"), std::string::npos) << seed << ": " << v.message;
  }
  // The control passes the same sweep (every rerun judged against the oracle).
  CorpusKernelRun control("controls/unique.json", 1, "shapes");
  ASSERT_TRUE(control.build.ok) << control.build.error;
  const GateVerdict v = make_gate("shapes")->run(*control.ctx);
  EXPECT_EQ(v.status, Status::Pass) << v.message;
}

TEST(KeySpreadSweep, SpecialValuesAndSubnormalsSkipAnOpWithoutFloatingInputs) {
  for (const char* gate : {"special-values", "subnormals"}) {
    CorpusKernelRun r("controls/unique.json", 1, gate);
    ASSERT_TRUE(r.build.ok) << r.build.error;
    const GateVerdict v = make_gate(gate)->run(*r.ctx);
    EXPECT_EQ(v.status, Status::Skip) << gate << ": " << v.message;
    EXPECT_NE(v.message.find("no floating input"), std::string::npos) << gate << ": " << v.message;
  }
  // An op with a floating input among integer ones still runs both (int8_matmul: its scales).
  CorpusKernelRun q("controls/int8_matmul.json", 1, "subnormals");
  ASSERT_TRUE(q.build.ok) << q.build.error;
  EXPECT_NE(make_gate("subnormals")->run(*q.ctx).status, Status::Skip);
}

}  // namespace
