// A CUDA child's start stamps read back by the parent and summed per process (child_start_clock.h).
#include "gauntlet/sandbox/child_start_clock.h"

#include <gtest/gtest.h>

#include "../../src/worker/startup_phases.h"

namespace gauntlet {
namespace {

// What a CUDA child sends: its device description with the phases and the two stamps.
std::string description(int64_t load_read, int64_t ready) {
  worker::StartupPhases p;
  p.load_read_ns = load_read;
  p.ready_ns = ready;
  return worker::with_startup_phases(R"({"name":"GPU"})", p);
}

TEST(ChildStartClock, StampsAreReadFromTheChildsDescription) {
  int64_t load_read = 0, ready = 0;
  ASSERT_TRUE(child_start_stamps(description(1000, 5000), &load_read, &ready));
  EXPECT_EQ(load_read, 1000);
  EXPECT_EQ(ready, 5000);
  // A CPU child (no description), an older worker (no stamps), stamps out of order or zero.
  EXPECT_FALSE(child_start_stamps("", &load_read, &ready));
  EXPECT_FALSE(child_start_stamps(R"({"name":"GPU","startup_seconds":{"context":0.2}})", &load_read, &ready));
  EXPECT_FALSE(child_start_stamps(description(5000, 1000), &load_read, &ready));
  EXPECT_FALSE(child_start_stamps(description(0, 0), &load_read, &ready));
  EXPECT_FALSE(child_start_stamps(R"({"startup_clock_ns":{"load_read":x,"ready":9}})", &load_read, &ready));
}

TEST(ChildStartClock, EachChildsIntervalsAreSummedAndForeignClocksDropped) {
  const ChildStartTotals before = child_start_totals();
  // Parent wrote Load at 1.0 s, the child read it at 1.1 s, was ready at 1.5 s, the parent read
  // the reply at 1.75 s.
  note_child_start(1'000'000'000, 1'750'000'000, description(1'100'000'000, 1'500'000'000));
  note_child_start(0, 1'000, "");  // a CPU child: nothing
  // Stamps outside the parent's wait: not the same clock, not counted.
  note_child_start(2'000'000'000, 3'000'000'000, description(1'000'000'000, 1'500'000'000));
  const ChildStartTotals after = child_start_totals();
  EXPECT_EQ(after.children - before.children, 1);
  EXPECT_NEAR(after.load_in_flight_seconds - before.load_in_flight_seconds, 0.1, 1e-9);
  EXPECT_NEAR(after.reply_in_flight_seconds - before.reply_in_flight_seconds, 0.25, 1e-9);
  EXPECT_NEAR(after.load_total_seconds - before.load_total_seconds, 0.75, 1e-9);
}

// The timeline's steps of a CUDA child's start (trace_child_start), from the stamps the worker writes
// (startup_phases.h): in order, each from its stamp to the next, none outside the parent's wait.
TEST(ChildStartClock, TheStartStepsRunFromEachStampToTheNext) {
  const std::string info =
      R"({"startup_clock_ns":{"load_read":110,"ready":190,"init":120,"context":130,"context_made":160,"warm":170}})";
  const auto steps = child_start_steps(100, 200, info);
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_STREQ(steps[0].kind, "child_cuda_init");
  EXPECT_EQ(steps[0].begin_ns, 120);
  EXPECT_EQ(steps[0].end_ns, 130);
  EXPECT_STREQ(steps[1].kind, "child_context");
  EXPECT_EQ(steps[1].end_ns, 160);
  EXPECT_STREQ(steps[2].kind, "child_first_poison");
  EXPECT_STREQ(steps[3].kind, "child_preload");
  EXPECT_EQ(steps[3].begin_ns, 170);
  EXPECT_EQ(steps[3].end_ns, 190);
  // Stamps outside the parent's wait are another clock's: dropped.
  EXPECT_TRUE(child_start_steps(150, 200, info).size() < 4u);
  // A CPU child (no stamps) or an older worker (no step stamps) has none.
  EXPECT_TRUE(child_start_steps(100, 200, "{}").empty());
  EXPECT_TRUE(child_start_steps(100, 200, R"({"startup_clock_ns":{"load_read":110,"ready":190}})").empty());
}

}  // namespace
}  // namespace gauntlet
