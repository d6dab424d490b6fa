// add_child_startup (src/cases/gate_support.cpp): every CUDA child's own start phases summed into a gate's timing.
#include <gtest/gtest.h>

#include "gauntlet/cases/gate.h"

namespace gauntlet {
namespace {

TEST(ChildStartup, EveryChildsPhasesAreSummedIntoTheGatesTiming) {
  GateContext::Timing t;
  const std::string child =
      R"({"name":"H100","startup_seconds":{"before_serve":0.007,"sandbox":0.001,"dlopen":0.002,"cuda_init":0.018,"context":0.161}})";
  add_child_startup(child, &t);
  add_child_startup(child, &t);
  EXPECT_DOUBLE_EQ(t.child_context, 0.322);
  EXPECT_DOUBLE_EQ(t.child_before_context, 2 * (0.007 + 0.001 + 0.002 + 0.018));
}

TEST(ChildStartup, ACpuChildOrAnUnreadableDescriptionAddsNothing) {
  GateContext::Timing t;
  add_child_startup("", &t);                                    // a CPU child describes no device
  add_child_startup("not json", &t);                            // never throws
  add_child_startup(R"({"name":"H100"})", &t);                  // a worker without phases
  add_child_startup(R"({"startup_seconds":{"context":"x","before_serve":-1}})", &t);  // -1: unknown
  EXPECT_EQ(t.child_context, 0);
  EXPECT_EQ(t.child_before_context, 0);
}

}  // namespace
}  // namespace gauntlet
