// Tests of the case budget (src/cases/case_cost.cpp): a contract whose smallest case is above a
// gate's per-case cap gets that case's cost as its cap and fewer cases, never none.
#include <gtest/gtest.h>

#include "gauntlet/cases/case_cost.h"
#include "gauntlet/oracle/module_oracle.h"
#include "../gates/real_run.h"

using namespace gauntlet;

namespace {

constexpr int64_t kCap = int64_t(1) << 18;

ModuleDescription one_input(std::vector<int64_t> shape) {
  ModuleDescription d;
  d.inputs.push_back({DType::Float32, shape});
  d.outputs.push_back({DType::Float32, shape});
  return d;
}

}  // namespace

// KernelBench's 23_Softmax shape, [16, 16384]: input and output are 2^18 elements each, twice the
// cap. The cap becomes exactly that case's cost and the cases halve.
TEST(CaseBudget, AFixedShapeAboveTheCapRaisesItAndRunsFewerCases) {
  const OpSchema s = module_schema(one_input({16, 16384}), "m.py", "module:1");
  KernelManifest m;
  CaseSpace space(s, m);
  const CaseBudget b = case_budget(space, kCap, 40);
  EXPECT_EQ(b.floor, 2 * 16 * 16384);
  EXPECT_EQ(b.cap, b.floor);
  EXPECT_EQ(b.cases, 20);
  EXPECT_TRUE(b.raised());
  EXPECT_NE(b.note().find("fewer cases at the contract's own shapes"), std::string::npos) << b.note();
}

// So large that the proportional count would be zero: still kMinCasesAtFloor cases, not none.
TEST(CaseBudget, AHugeFixedShapeStillRunsTheMinimumOfCases) {
  const OpSchema s = module_schema(one_input({4096, 4096}), "m.py", "module:1");
  KernelManifest m;
  CaseSpace space(s, m);
  const CaseBudget b = case_budget(space, kCap, 12);
  EXPECT_EQ(b.cap, 2 * 4096 * 4096);
  EXPECT_EQ(b.cases, kMinCasesAtFloor);
  // A gate that asks for fewer than the minimum keeps its own count.
  EXPECT_EQ(case_budget(space, kCap, 2).cases, 2);
  // A gate's own minimum (special-values keeps six, subnormals one per plan).
  EXPECT_EQ(case_budget(space, kCap, 30, 6).cases, 6);
  EXPECT_EQ(case_budget(space, kCap, 4, 1).cases, 1);
}

// A small fixed shape, and a schema whose dims reach down to 1, keep the gate's own budget.
TEST(CaseBudget, ContractsWithSmallCasesKeepTheGatesBudget) {
  const OpSchema small = module_schema(one_input({4, 8}), "m.py", "module:1");
  KernelManifest m;
  CaseSpace small_space(small, m);
  const CaseBudget a = case_budget(small_space, kCap, 40);
  EXPECT_EQ(a.floor, 64);
  EXPECT_EQ(a.cap, kCap);
  EXPECT_EQ(a.cases, 40);
  EXPECT_FALSE(a.raised());
  EXPECT_EQ(a.note(), "");

  const OpSchema relu = gauntlet::testing::load_test_schema("relu");
  CaseSpace relu_space(relu, m);
  const CaseBudget r = case_budget(relu_space, kCap, 40);
  EXPECT_GT(r.floor, 0);
  EXPECT_LE(r.floor, 16);
  EXPECT_EQ(r.cap, kCap);
  EXPECT_EQ(r.cases, 40);
}

// A manifest's narrower limits are the contract: a minimum N of 2^20 puts relu's smallest case (one
// row: input and output) at 2^21, eight times the cap.
TEST(CaseBudget, AManifestMinimumIsTheContractsFloor) {
  const OpSchema relu = gauntlet::testing::load_test_schema("relu");
  KernelManifest m;
  m.shapes["N"].min = int64_t(1) << 20;
  CaseSpace space(relu, m);
  const CaseBudget b = case_budget(space, kCap, 40);
  EXPECT_EQ(b.floor, int64_t(1) << 21);
  EXPECT_TRUE(b.raised());
  EXPECT_EQ(b.cases, 5);
}

// clamp's attribute constraint "lo <= hi", one evaluation for the contract check and the case
// space alike: values that break it are named, a case built with them is refused with the
// constraint, and a name the expression lacks is a broken constraint with its reason.
TEST(AttrConstraints, BrokenValuesAreNamedAndTheirCaseIsRefused) {
  const OpSchema clamp = gauntlet::testing::load_test_schema("clamp");
  std::string why = "untouched";
  EXPECT_EQ(clamp.broken_attr_constraint({{"lo", -1.0}, {"hi", 1.0}}, &why), "");
  EXPECT_EQ(why, "untouched");
  EXPECT_EQ(clamp.broken_attr_constraint({{"lo", 1.0}, {"hi", 0.0}}, &why), "lo <= hi");
  EXPECT_EQ(why, "");
  EXPECT_EQ(clamp.broken_attr_constraint({{"lo", 1.0}}, &why), "lo <= hi");
  EXPECT_NE(why.find("hi"), std::string::npos) << why;

  KernelManifest m;
  CaseSpace space(clamp, m);
  Case c;
  std::string error;
  const std::map<std::string, int64_t> dims = {{"N", 8}};
  EXPECT_FALSE(space.build(dims, 0, {{"lo", 1.0}, {"hi", 0.0}}, DType::Float32, Distribution::Normal, 1, &c, &error));
  EXPECT_EQ(error, "attribute constraint 'lo <= hi' fails");
  EXPECT_TRUE(space.build(dims, 0, {{"lo", -1.0}, {"hi", 0.0}}, DType::Float32, Distribution::Normal, 1, &c, &error)) << error;
}
