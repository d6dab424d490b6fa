// Tests of the one root cause per failing kernel (src/run/root_cause.cpp).
#include <gtest/gtest.h>

#include "gauntlet/cases/contract_scope.h"
#include "gauntlet/run/root_cause.h"

using namespace gauntlet;

namespace {

GateVerdict failing(const char* gate, const char* scope, int64_t elements, const char* diagnosis = nullptr) {
  GateVerdict v;
  v.name = gate;
  v.status = Status::Fail;
  v.category = Category::WrongResult;
  v.scope = scope;
  v.message = std::string(gate) + " message";
  v.evidence["deciding_case"] = {{"label", std::string("case of ") + gate}, {"elements", elements}};
  if (diagnosis) v.evidence["diagnosis"] = {{"name", diagnosis}, {"text", std::string(diagnosis) + " text"}};
  return v;
}

}  // namespace

TEST(RootCause, OneBugAcrossGatesIsOneCauseLedByTheSmallestCase) {
  GateVerdict pass;
  pass.name = "contract";
  const std::vector<GateVerdict> gates = {pass,
                                          failing("accuracy", kInContract, 700, "gelu-tanh"),
                                          failing("special-values", kInContract, 30, "gelu-tanh"),
                                          failing("shapes", kInContract, 9000, "gelu-tanh"),
                                          failing("provenance", kInContract, 1)};
  const nlohmann::json c = root_cause(gates);
  // provenance's case is smaller, but it is another cause only when the smallest leads: the
  // smallest failing case across all gates leads, whatever its cause.
  EXPECT_EQ(c["gate"], "provenance");
  const std::vector<GateVerdict> diagnosed(gates.begin(), gates.end() - 1);
  const nlohmann::json d = root_cause(diagnosed);
  EXPECT_EQ(d["gate"], "special-values");
  EXPECT_EQ(d["diagnosis"], "gelu-tanh");
  EXPECT_EQ(d["elements"], 30);
  EXPECT_EQ(d["gates"], (nlohmann::json{"accuracy", "special-values", "shapes"}));
  EXPECT_TRUE(d["other_gates"].empty());
  const std::string line = root_cause_line(d);
  EXPECT_NE(line.find("in-contract, special-values, gelu-tanh: gelu-tanh text"), std::string::npos) << line;
  EXPECT_NE(line.find("the same cause fails 3 gates: accuracy, special-values, shapes"), std::string::npos) << line;
}

TEST(RootCause, InContractFailuresLeadOverOutOfContractOnes) {
  const nlohmann::json c = root_cause({failing("layouts", kOutOfContract, 4), failing("accuracy", kInContract, 5000)});
  EXPECT_EQ(c["gate"], "accuracy");
  EXPECT_EQ(c["scope"], kInContract);
  EXPECT_EQ(c["other_gates"], nlohmann::json{"layouts"});
  const nlohmann::json u = root_cause({failing("layouts", kOutOfContract, 4), failing("shapes", kOutOfContract, 2)});
  EXPECT_EQ(u["gate"], "shapes");  // an unsafe kernel's cause is outside its contract
  EXPECT_EQ(u["scope"], kOutOfContract);
  EXPECT_EQ(u["gates"], (nlohmann::json{"layouts", "shapes"}));  // same category and scope
}

TEST(RootCause, NoFailureNoCause) {
  GateVerdict pass;
  pass.name = "accuracy";
  EXPECT_TRUE(root_cause({pass}).is_null());
  EXPECT_EQ(root_cause_line(nullptr), "");
}
