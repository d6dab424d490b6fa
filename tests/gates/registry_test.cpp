// The gate table (gates/registry.cpp): every gate once, its hardware queues, its place among waiting gates.
#include <gtest/gtest.h>

#include <cstdlib>

#include <set>

#include "gauntlet/cases/gate.h"

namespace gauntlet {
namespace {

TEST(GateRegistry, TheTwelveGatesThenTimingEachMadeByItsName) {
  const std::vector<std::string> names = gate_names();
  ASSERT_EQ(names.size(), 13u);
  EXPECT_EQ(names.front(), "contract");
  EXPECT_EQ(names.back(), "timing");
  for (const std::string& n : names) {
    auto g = make_gate(n);
    ASSERT_TRUE(g) << n;
  }
  EXPECT_FALSE(make_gate("no-such-gate"));
}

TEST(GateRegistry, OnlyDeterminismAndTimingKeepConcurrentHardwareQueues) {
  for (const std::string& n : gate_names())
    EXPECT_EQ(gate_hardware_queues(n), n == "determinism" || n == "timing" ? 2u : 1u) << n;
}

// GAUNTLET_CONCURRENT_GATE_QUEUES (a measurement knob) sets the queues of the gates that keep
// several; the others keep one whatever it says.
TEST(GateRegistry, TheConcurrentGatesQueuesAreSetTogetherAndTheOthersKeepOne) {
  for (const std::string& n : gate_names())
    EXPECT_EQ(gate_hardware_queues(n, 2), n == "determinism" || n == "timing" ? 2u : 1u) << n;
  EXPECT_EQ(gate_hardware_queues("no-such-gate", 2), 0u);
}

TEST(GateRegistry, TheConcurrentQueuesSettingIsCheckedWhenGiven) {
  uint32_t q = 99;
  std::string error;
  unsetenv("GAUNTLET_CONCURRENT_GATE_QUEUES");
  EXPECT_TRUE(concurrent_gate_queues_from_env(&q, &error));
  EXPECT_EQ(q, 2u);
  setenv("GAUNTLET_CONCURRENT_GATE_QUEUES", "8", 1);
  EXPECT_TRUE(concurrent_gate_queues_from_env(&q, &error));
  EXPECT_EQ(q, 8u);
  setenv("GAUNTLET_CONCURRENT_GATE_QUEUES", "0", 1);  // the driver's default
  EXPECT_TRUE(concurrent_gate_queues_from_env(&q, &error));
  EXPECT_EQ(q, 0u);
  for (const char* bad : {"-1", "33", "two", "2x"}) {
    setenv("GAUNTLET_CONCURRENT_GATE_QUEUES", bad, 1);
    error.clear();
    EXPECT_FALSE(concurrent_gate_queues_from_env(&q, &error)) << bad;
    EXPECT_NE(error.find("GAUNTLET_CONCURRENT_GATE_QUEUES='" + std::string(bad) + "'"), std::string::npos) << error;
  }
  unsetenv("GAUNTLET_CONCURRENT_GATE_QUEUES");
}

// Waiting gates get slots longest first (GateSlots::acquire): each gate its own rank, an unknown
// name after every known one, and the long gates before the short ones.
TEST(GateRegistry, EveryGateHasItsOwnStartRankLongestFirst) {
  std::set<int> ranks;
  for (const std::string& n : gate_names()) {
    EXPECT_TRUE(ranks.insert(gate_start_rank(n)).second) << n << " shares its rank";
    EXPECT_LT(gate_start_rank(n), gate_start_rank("no-such-gate")) << n;
  }
  EXPECT_LT(gate_start_rank("memory"), gate_start_rank("contract"));
  EXPECT_LT(gate_start_rank("statelessness"), gate_start_rank("accuracy"));
  EXPECT_LT(gate_start_rank("determinism"), gate_start_rank("special-values"));
}

}  // namespace
}  // namespace gauntlet
