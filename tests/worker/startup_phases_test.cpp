// A CUDA child's start phases as its device description carries them into reports.
#include "../../src/worker/startup_phases.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace gauntlet::worker {
namespace {

TEST(StartupPhases, TheDeviceDescriptionGainsEachPhaseAndStaysAnObject) {
  StartupPhases p;
  p.before_serve = 0.25;
  p.sandbox = 0.01;
  p.dlopen = 0.5;
  p.cuda_init = 0.125;
  p.context = 0.0625;
  const nlohmann::json j = nlohmann::json::parse(with_startup_phases(R"({"name":"H100","index":0})", p));
  EXPECT_EQ(j.at("name"), "H100");
  const nlohmann::json& s = j.at("startup_seconds");
  EXPECT_DOUBLE_EQ(s.at("before_serve").get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(s.at("dlopen").get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(s.at("cuda_init").get<double>(), 0.125);
  EXPECT_DOUBLE_EQ(s.at("context").get<double>(), 0.0625);
  EXPECT_DOUBLE_EQ(s.at("load_wait").get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(s.at("preload").get<double>(), 0.0);
  p.preload = 0.0625;
  p.preload_symbols = 4000;
  p.preload_kernels = 2;
  const nlohmann::json k = nlohmann::json::parse(with_startup_phases("{}", p));
  EXPECT_DOUBLE_EQ(k.at("startup_seconds").at("preload").get<double>(), 0.0625);
  EXPECT_EQ(k.at("preloaded").at("symbols").get<int>(), 4000);
  EXPECT_EQ(k.at("preloaded").at("kernels").get<int>(), 2);
  EXPECT_TRUE(nlohmann::json::parse(with_startup_phases("{}", p)).contains("startup_seconds"));
}

// The stamps on the host-wide clock the parent reads them against (child_start_clock.h).
TEST(StartupPhases, TheStampsTravelAsIntegerNanoseconds) {
  StartupPhases p;
  p.load_wait = 0.003;
  p.load_read_ns = 123456789012345;
  p.ready_ns = 123456999012345;
  const nlohmann::json j = nlohmann::json::parse(with_startup_phases("{}", p));
  EXPECT_DOUBLE_EQ(j.at("startup_seconds").at("load_wait").get<double>(), 0.003);
  EXPECT_EQ(j.at("startup_clock_ns").at("load_read").get<int64_t>(), 123456789012345);
  EXPECT_EQ(j.at("startup_clock_ns").at("ready").get<int64_t>(), 123456999012345);
  // The CUDA start's steps (the timeline's child_* intervals); 0 where not reached.
  EXPECT_EQ(j.at("startup_clock_ns").at("init").get<int64_t>(), 0);
  p.init_ns = 123456800000000, p.context_ns = 123456810000000, p.context_made_ns = 123456900000000;
  p.warm_ns = 123456950000000;
  const nlohmann::json k = nlohmann::json::parse(with_startup_phases("{}", p));
  EXPECT_EQ(k.at("startup_clock_ns").at("init").get<int64_t>(), 123456800000000);
  EXPECT_EQ(k.at("startup_clock_ns").at("context").get<int64_t>(), 123456810000000);
  EXPECT_EQ(k.at("startup_clock_ns").at("context_made").get<int64_t>(), 123456900000000);
  EXPECT_EQ(k.at("startup_clock_ns").at("warm").get<int64_t>(), 123456950000000);
}

TEST(StartupPhases, ADescriptionThatIsNotAnObjectIsLeftAlone) {
  EXPECT_EQ(with_startup_phases("", StartupPhases{}), "");
  EXPECT_EQ(with_startup_phases("no device", StartupPhases{}), "no device");
}

TEST(StartupPhases, TheProcessAgeIsReadFromProc) {
  const double age = seconds_since_process_start();
  EXPECT_GE(age, 0.0);
  EXPECT_LT(age, 86400.0 * 365) << "a clock-tick count misread as seconds would be far larger";
}

}  // namespace
}  // namespace gauntlet::worker
