// Which ranges of the CUDA allocator's cache the worker poisons, from pictures of its segments.
#include "../../src/worker/cache_fill_plan.h"

#include <gtest/gtest.h>

namespace gauntlet::worker {
namespace {

constexpr int64_t kMiB = int64_t(1) << 20;

CacheSegmentView segment(uint64_t address, std::vector<CacheBlockView> blocks) {
  CacheSegmentView s;
  s.address = address;
  s.on_fill_stream = true;
  s.blocks = std::move(blocks);
  return s;
}

TEST(CacheFillPlan, AFreeRemainderBesideALiveTensorIsFilledWhereItLies) {
  // A 2 MiB small-pool segment holding a previous call's 4 KiB output: whole 1 MiB poison blocks
  // can take at most one of its free MiBs; the rest is what a repeat call's outputs would get.
  const uint64_t base = 0x7f0000000000;
  const auto ranges = free_ranges_to_fill({segment(base, {{4096, true, true}, {2 * kMiB - 4096, false, false}})});
  ASSERT_EQ(ranges.size(), 1u);
  EXPECT_EQ(ranges[0].address, base + 4096);
  EXPECT_EQ(ranges[0].bytes, 2 * kMiB - 4096);
}

TEST(CacheFillPlan, EveryFreeBlockOfASegmentAtItsOffsetAndNoLiveOne) {
  const uint64_t base = 0x10000000;
  const auto ranges = free_ranges_to_fill({segment(base, {{kMiB, false, false},
                                                          {512, true, true},
                                                          {3 * kMiB, false, false},
                                                          {kMiB, true, true}})});
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(ranges[0].address, base);
  EXPECT_EQ(ranges[0].bytes, kMiB);
  EXPECT_EQ(ranges[1].address, base + kMiB + 512);
  EXPECT_EQ(ranges[1].bytes, 3 * kMiB);
}

TEST(CacheFillPlan, ABlockStillAwaitedByAnotherStreamIsNotWritten) {
  // Freed, but work recorded on another stream may still use it: a fill could land under that work.
  const auto ranges = free_ranges_to_fill({segment(0x1000000, {{kMiB, false, true}, {kMiB, false, false}})});
  ASSERT_EQ(ranges.size(), 1u);
  EXPECT_EQ(ranges[0].address, uint64_t(0x1000000 + kMiB));
}

TEST(CacheFillPlan, OtherStreamsAndPrivatePoolsAreLeftAlone) {
  CacheSegmentView other = segment(0x2000000, {{20 * kMiB, false, false}});
  other.on_fill_stream = false;  // handed out only on its own stream, unordered after the fills
  CacheSegmentView graph = segment(0x4000000, {{20 * kMiB, false, false}});
  graph.private_pool = true;
  const auto ranges = free_ranges_to_fill({other, graph, segment(0x8000000, {{2 * kMiB, false, false}})});
  ASSERT_EQ(ranges.size(), 1u);
  EXPECT_EQ(ranges[0].address, uint64_t(0x8000000));
}

TEST(CacheFillPlan, NeighbouringFreeBlocksAreOneFillButNeverAcrossTwoSegments) {
  const uint64_t a = 0x20000000;
  const auto ranges = free_ranges_to_fill(
      {segment(a, {{kMiB, false, false}, {kMiB, false, false}}), segment(a + 2 * kMiB, {{kMiB, false, false}})});
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(ranges[0].bytes, 2 * kMiB);
  EXPECT_EQ(ranges[1].address, a + 2 * kMiB);
  EXPECT_EQ(ranges[1].bytes, kMiB);
}

TEST(CacheFillPlan, AnEmptyCacheOrAllLiveNeedsNoFill) {
  EXPECT_TRUE(free_ranges_to_fill({}).empty());
  EXPECT_TRUE(free_ranges_to_fill({segment(0x1000, {{kMiB, true, true}})}).empty());
}

}  // namespace
}  // namespace gauntlet::worker
