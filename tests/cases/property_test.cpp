// Tests of the RapidCheck-driven search: failures are found and shrunk to the smallest failing case.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "gauntlet/cases/property.h"

using namespace gauntlet;

namespace {

struct Fixture {
  std::vector<SchemaIssue> issues;
  OpSchema schema = *load_schema_file(std::string(GAUNTLET_SOURCE_DIR) + "/opschemas/softmax.json", &issues);
  KernelManifest manifest;
  CaseSpace space{schema, manifest};
  Launcher launcher{SandboxOptions{}};
  GateContext ctx{schema, manifest, space, launcher, "", std::string(64, 'a'), "", 42, 1, "", ""};
};

std::vector<int64_t> all_sizes(const CaseSpace& space, const std::string& dim) {
  std::vector<int64_t> v;
  auto [lo, hi] = space.limits_for(dim);
  for (int64_t s = std::max<int64_t>(lo, 1); s <= std::min<int64_t>(hi, 40); ++s) v.push_back(s);
  return v;
}

Case pick_case(Fixture& f) {
  auto dims = pick_dims(f.space, [&](const std::string& d) { return all_sizes(f.space, d); });
  Case c;
  std::string error;
  f.space.build(dims, 0, {{"dim", int64_t(-1)}}, DType::Float32, Distribution::Normal, pick_seed(), &c, &error);
  return c;
}

TEST(Property, ShrinksToTheSmallestFailingShape) {
  Fixture f;
  // A planted property: fails whenever the reduced dim N is at least 17.
  auto check = [&](const Case& c) {
    GateVerdict v;
    v.name = "test";
    if (!c.tensors.empty() && c.tensors[0].shape.back() >= 17) {
      v.status = Status::Fail;
      v.message = "N >= 17";
    }
    return v;
  };
  PropertyOutcome out = run_property(f.ctx, "test", 200, [&] { return pick_case(f); }, check);
  ASSERT_TRUE(out.failed);
  EXPECT_EQ(out.verdict.status, Status::Fail);
  EXPECT_EQ(out.smallest.tensors[0].shape.back(), 17) << out.smallest.label;
  // Every other dim shrinks to its smallest size.
  for (size_t i = 0; i + 1 < out.smallest.tensors[0].shape.size(); ++i) EXPECT_EQ(out.smallest.tensors[0].shape[i], 1);
  EXPECT_GT(out.shrink_steps, 0);
}

TEST(Property, SameSeedSameSearch) {
  Fixture a, b;
  auto check = [&](const Case& c) {
    GateVerdict v;
    if (c.tensors[0].shape.back() % 7 == 3) v.status = Status::Fail;
    return v;
  };
  auto ra = run_property(a.ctx, "test", 100, [&] { return pick_case(a); }, check);
  auto rb = run_property(b.ctx, "test", 100, [&] { return pick_case(b); }, check);
  ASSERT_EQ(ra.failed, rb.failed);
  EXPECT_EQ(case_to_json(ra.smallest), case_to_json(rb.smallest));
  EXPECT_EQ(ra.cases, rb.cases);
}

TEST(Property, PassingPropertyRunsItsBudget) {
  Fixture f;
  int calls = 0;
  auto out = run_property(f.ctx, "test", 25, [&] { return pick_case(f); }, [&](const Case&) {
    ++calls;
    return GateVerdict{};
  });
  EXPECT_FALSE(out.failed);
  EXPECT_EQ(calls, 25);
}

TEST(Property, HarnessErrorsAreNotShrunk) {
  Fixture f;
  int calls = 0;
  auto out = run_property(f.ctx, "test", 50, [&] { return pick_case(f); }, [&](const Case&) {
    ++calls;
    GateVerdict v;
    v.status = Status::HarnessError;
    return v;
  });
  EXPECT_TRUE(out.failed);
  EXPECT_EQ(out.verdict.status, Status::HarnessError);
  EXPECT_EQ(calls, 1);
}

}  // namespace

// verify runs a kernel's gates in threads; RapidCheck keeps its generation state in process-wide
// statics, so concurrent searches must be serialized (without the lock this crashed on the H200).
TEST(Property, ConcurrentSearchesFromThreadsEachFindTheirShrunkCase) {
  constexpr int kThreads = 6;
  std::vector<PropertyOutcome> outcomes(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&outcomes, t] {
      Fixture f;
      const int64_t threshold = 10 + t;  // each thread its own planted failure
      auto check = [&](const Case& c) {
        GateVerdict v;
        if (c.tensors[0].shape.back() >= threshold) v.status = Status::Fail;
        return v;
      };
      outcomes[size_t(t)] = run_property(f.ctx, "test", 200, [&] { return pick_case(f); }, check);
    });
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_TRUE(outcomes[size_t(t)].failed) << "thread " << t;
    EXPECT_EQ(outcomes[size_t(t)].smallest.tensors[0].shape.back(), 10 + t) << "thread " << t;
  }
}

// A gate's checks run outside RapidCheck's lock: two searches in one process judge cases at the
// same moment (the gates of a kernel search side by side). Each check waits, bounded, for the
// other search to be inside a check too; with the lock held over the checks that never happens.
TEST(Property, TwoSearchesJudgeTheirCasesAtTheSameTime) {
  std::mutex mu;
  std::condition_variable cv;
  int inside = 0;
  bool overlapped = false, gave_up = false;  // one bounded wait at most: a failure costs 30 s, not 30 s a case
  auto search = [&](PropertyOutcome* out) {
    Fixture f;
    *out = run_property(f.ctx, "test", 5, [&] { return pick_case(f); }, [&](const Case&) {
      std::unique_lock<std::mutex> lock(mu);
      ++inside;
      cv.notify_all();
      if (!gave_up && cv.wait_for(lock, std::chrono::seconds(30), [&] { return inside >= 2 || overlapped; }))
        overlapped = true;
      else
        gave_up = true;
      --inside;
      return GateVerdict{};
    });
  };
  PropertyOutcome a, b;
  std::thread ta(search, &a), tb(search, &b);
  ta.join();
  tb.join();
  EXPECT_TRUE(overlapped) << "the two searches never had a check in flight at once";
  EXPECT_FALSE(a.failed);
  EXPECT_EQ(a.cases, 5);
  EXPECT_EQ(b.cases, 5);
}

TEST(Property, ShrinkingStopsAtItsBudget) {
  Fixture f;
  int calls = 0;
  auto out = run_property(f.ctx, "test", 200, [&] { return pick_case(f); }, [&](const Case& c) {
    ++calls;
    GateVerdict v;
    if (c.tensors[0].shape.back() >= 2) v.status = Status::Fail;  // shrinks a long way to 2
    return v;
  }, 3);
  ASSERT_TRUE(out.failed);
  EXPECT_EQ(out.shrink_steps, 3);
  EXPECT_EQ(calls, out.cases + 3);
}

TEST(Property, ACheckThatThrowsIsAHarnessErrorNamingTheCase) {
  Fixture f;
  auto out = run_property(f.ctx, "test", 10, [&] { return pick_case(f); }, [&](const Case&) -> GateVerdict {
    throw std::runtime_error("planted");
  });
  ASSERT_TRUE(out.failed);
  EXPECT_EQ(out.verdict.status, Status::HarnessError);
  EXPECT_NE(out.verdict.message.find("planted"), std::string::npos) << out.verdict.message;
  EXPECT_EQ(out.shrink_steps, 0);
}
