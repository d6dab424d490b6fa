// GAUNTLET_TRACE_DIR end to end: a real verify writes the timeline its gates, children and cases
// made, on one clock, and tools/gpu/trace_timeline.py reads it back into a gate table.
#include <gtest/gtest.h>

#include <dirent.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "e2e_util.h"
#include "gauntlet/common/trace.h"

namespace gauntlet::e2e {
namespace {

struct ScopedTraceDir {
  explicit ScopedTraceDir(const std::string& dir) { setenv("GAUNTLET_TRACE_DIR", dir.c_str(), 1); }
  ~ScopedTraceDir() { unsetenv("GAUNTLET_TRACE_DIR"); }
};

std::vector<trace::Interval> read_trace(const std::string& dir) {
  std::vector<trace::Interval> all;
  DIR* d = opendir(dir.c_str());
  if (!d) return all;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind("trace-", 0) != 0) continue;
    std::ifstream in(dir + "/" + name);
    for (std::string line; std::getline(in, line);) {
      trace::Interval i;
      EXPECT_TRUE(trace::parse_line(line, &i)) << name << ": " << line;
      all.push_back(i);
    }
  }
  closedir(d);
  return all;
}

// `verify_report(args)` with GAUNTLET_TRACE_DIR set to a fresh *trace_dir for the run.
Verified verify_traced(const std::vector<std::string>& args, std::string* trace_dir) {
  *trace_dir = temp_dir() + "/trace";
  EXPECT_EQ(std::system(("mkdir -p '" + *trace_dir + "'").c_str()), 0);
  ScopedTraceDir env(*trace_dir);
  return verify_report(args);
}

TEST(TraceTimeline, AVerifyTracesEveryGateItsChildrenAndTheirCases) {
  const std::string dir = temp_dir();
  std::string trace_dir;
  const Verified v = verify_traced({source_dir() + "/corpus/controls/relu.json"}, &trace_dir);
  ASSERT_EQ(v.exit_code, 0) << v.log;
  ASSERT_TRUE(v.report.is_object()) << v.log;
  const auto intervals = read_trace(trace_dir);
  std::map<std::string, int> gates, kinds;
  for (const auto& i : intervals) {
    ++kinds[i.kind];
    if (i.kind == "gate") ++gates[i.detail];
  }
  // Every gate that ran held a slot once; every child was spawned, loaded and said goodbye.
  int children = 0;
  for (const auto& g : v.report.at("gates")) {
    if (g.value("status", "") == "skip") continue;
    EXPECT_EQ(gates[g.at("name").get<std::string>()], 1) << g.at("name");
    children += g.value("evidence", nlohmann::json::object()).value("time", nlohmann::json::object()).value("children", 0);
  }
  EXPECT_GT(children, 0);
  EXPECT_GE(kinds["spawn"], children);
  EXPECT_GE(kinds["load"], children);
  EXPECT_GE(kinds["session"], children);
  EXPECT_GT(kinds["call"], children);  // each child ran cases
  // Each case lies inside a gate's slot time, in the same process and thread.
  for (const auto& c : intervals) {
    if (c.kind != "call") continue;
    bool inside = false;
    for (const auto& g : intervals)
      inside = inside || (g.kind == "gate" && g.pid == c.pid && g.tid == c.tid && g.begin_ns <= c.begin_ns &&
                          c.end_ns <= g.end_ns);
    EXPECT_TRUE(inside) << "a call at " << c.begin_ns << " outside every gate of its thread";
  }
  // The reader turns it into the gate table.
  const std::string out = dir + "/timeline.md";
  const std::string cmd = "python3 '" + source_dir() + "/tools/gpu/trace_timeline.py' '" + trace_dir + "' > '" + out + "' 2>&1";
  if (std::system("python3 -c '' 2>/dev/null") != 0) GTEST_SKIP() << "no python3 to read the timeline with";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << read_file(out);
  const std::string table = read_file(out);
  EXPECT_NE(table.find("| contract | 1 |"), std::string::npos) << table;
  EXPECT_NE(table.find("a context being created"), std::string::npos) << table;
}

// The free slots go to the longest gates first (gate_start_rank): with two slots, memory and
// statelessness take them, in that order, and every other gate waits. Fails with the gates' threads
// started in the table's order, where contract and accuracy took the free slots.
TEST(TraceTimeline, TheFirstFreeSlotsGoToTheLowestStartRanks) {
  std::string trace_dir;
  const Verified v = verify_traced({source_dir() + "/corpus/controls/relu.json", "--jobs", "2", "--gates",
                                    "contract,accuracy,shapes,statelessness,memory"},
                                   &trace_dir);
  ASSERT_EQ(v.exit_code, 0) << v.log;
  std::vector<trace::Interval> slots;
  for (const auto& i : read_trace(trace_dir))
    if (i.kind == "slot_wait") slots.push_back(i);
  ASSERT_EQ(slots.size(), 5u);
  std::sort(slots.begin(), slots.end(), [](const auto& a, const auto& b) { return a.end_ns < b.end_ns; });
  EXPECT_EQ(slots[0].detail, "memory");
  EXPECT_EQ(slots[1].detail, "statelessness");
  EXPECT_EQ(slots[2].detail, "shapes");  // the next rank, once a slot frees
}

}  // namespace
}  // namespace gauntlet::e2e
