// The timeline's file (common/trace.h): lines parse back as written, threads never interleave them,
// a directory that cannot be written leaves the writer silent, and malformed lines are refused.
#include "gauntlet/common/trace.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace gauntlet::trace {
namespace {

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string fresh_dir(const char* name) {
  const std::string dir = ::testing::TempDir() + "/" + name + "-" + std::to_string(getpid());
  std::system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'").c_str());
  return dir;
}

TEST(TraceWriter, AnIntervalParsesBackWithItsDetailCleaned) {
  const std::string dir = fresh_dir("trace-one");
  {
    Writer w(dir);
    ASSERT_TRUE(w.ok()) << w.path();
    EXPECT_EQ(w.path(), dir + "/trace-" + std::to_string(getpid()) + ".tsv");
    w.interval("turn", 100, 250, "case\tbeside\nnext");
  }
  const auto lines = lines_of(dir + "/trace-" + std::to_string(getpid()) + ".tsv");
  ASSERT_EQ(lines.size(), 1u);
  Interval i;
  ASSERT_TRUE(parse_line(lines[0], &i)) << lines[0];
  EXPECT_EQ(i.kind, "turn");
  EXPECT_EQ(i.begin_ns, 100);
  EXPECT_EQ(i.end_ns, 250);
  EXPECT_EQ(i.pid, long(getpid()));
  EXPECT_EQ(i.tid, long(gettid()));
  EXPECT_EQ(i.detail, "case beside next");
}

TEST(TraceWriter, LinesFromManyThreadsNeverInterleave) {
  const std::string dir = fresh_dir("trace-threads");
  constexpr int kThreads = 8, kEach = 500;
  {
    Writer w(dir);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&w, t] {
        for (int n = 0; n < kEach; ++n) w.interval("call", n, n + t, std::string(200, char('a' + t)));
      });
    for (auto& th : threads) th.join();
  }
  const auto lines = lines_of(dir + "/trace-" + std::to_string(getpid()) + ".tsv");
  ASSERT_EQ(lines.size(), size_t(kThreads * kEach));
  std::set<long> tids;
  for (const std::string& line : lines) {
    Interval i;
    ASSERT_TRUE(parse_line(line, &i)) << line;
    ASSERT_EQ(i.detail.size(), 200u);
    EXPECT_EQ(i.detail.find_first_not_of(i.detail[0]), std::string::npos) << "two lines mixed: " << line;
    tids.insert(i.tid);
  }
  EXPECT_EQ(tids.size(), size_t(kThreads));
}

TEST(TraceWriter, ADirectoryThatCannotBeWrittenLeavesTheWriterSilent) {
  Writer w(::testing::TempDir() + "/no/such/directory/here");
  EXPECT_FALSE(w.ok());
  w.interval("turn", 1, 2, "");  // must not crash or throw
}

TEST(TraceParse, MalformedLinesAreRefused) {
  Interval i;
  EXPECT_FALSE(parse_line("", &i));
  EXPECT_FALSE(parse_line("turn\t1\t2\t3", &i));             // no thread
  EXPECT_FALSE(parse_line("turn\tx\t2\t3\t4\tdetail", &i));   // not a number
  EXPECT_FALSE(parse_line("turn\t5\t2\t3\t4\tdetail", &i));   // ends before it begins
  EXPECT_FALSE(parse_line("\t1\t2\t3\t4\tdetail", &i));       // no kind
  EXPECT_TRUE(parse_line("turn\t1\t2\t3\t4", &i));            // the detail may be absent
  EXPECT_EQ(i.detail, "");
}

}  // namespace
}  // namespace gauntlet::trace
