// Tests of the timing gate's arithmetic and messages: summaries, roofline, cuobjdump parsing, wire round trips.
#include <gtest/gtest.h>

#include "gauntlet/common/timing.h"

namespace gauntlet {
namespace {

TEST(TimingSummary, MedianQuartilesAndOrderStatisticInterval) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);  // 1..100, unsorted
  timing::Summary s = timing::summarize(v);
  EXPECT_EQ(s.n, 100);
  EXPECT_DOUBLE_EQ(s.median, 50.5);
  EXPECT_DOUBLE_EQ(s.p25, 25.75);
  EXPECT_DOUBLE_EQ(s.p75, 75.25);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 100);
  // Ranks 50 -+ 9.8: the 40th and 61st values.
  EXPECT_DOUBLE_EQ(s.ci_low, 40);
  EXPECT_DOUBLE_EQ(s.ci_high, 61);
  EXPECT_NEAR(s.spread(), 49.5 / 50.5, 1e-12);
}

TEST(TimingSummary, SmallAndEmptySamples) {
  timing::Summary one = timing::summarize({3.0});
  EXPECT_EQ(one.n, 1);
  EXPECT_DOUBLE_EQ(one.median, 3.0);
  EXPECT_DOUBLE_EQ(one.ci_low, 3.0);
  EXPECT_DOUBLE_EQ(one.ci_high, 3.0);
  timing::Summary none = timing::summarize({});
  EXPECT_EQ(none.n, 0);
  EXPECT_DOUBLE_EQ(none.spread(), 0);
  // Too few samples for a 95% interval: the extremes.
  timing::Summary five = timing::summarize({5, 1, 4, 2, 3});
  EXPECT_DOUBLE_EQ(five.ci_low, 1);
  EXPECT_DOUBLE_EQ(five.ci_high, 5);
}

TEST(TimingSummary, UnsteadyRunsAndWhichAttemptIsKept) {
  // Three input sets of different cost (1, 2 and 3 ms), each steady: the kernel, not noise.
  std::vector<double> sets_differ;
  for (int i = 0; i < 60; ++i) sets_differ.push_back(1.0 + i % 3 + 0.01 * (i % 5));
  const timing::Steadiness quiet = timing::steadiness(sets_differ, 3);
  EXPECT_EQ(quiet.n, 60);
  EXPECT_LT(quiet.spread, 0.05);
  EXPECT_GT(timing::steadiness(sets_differ, 1).spread, 0.5);  // pooled, the sets look like noise
  EXPECT_FALSE(timing::unsteady(quiet, quiet.median));
  EXPECT_FALSE(timing::unsteady(quiet, 0.0));  // no other run to compare with
  // About every other call six times slower at random: noise within the groups. (Every other call
  // exactly would be the baseline-order effect, which is not noise.)
  std::vector<double> bimodal;
  uint32_t state = 2463534242u;
  for (int i = 0; i < 60; ++i) {
    state ^= state << 13, state ^= state >> 17, state ^= state << 5;
    bimodal.push_back((1.0 + i % 3) * (state & 1u ? 6.0 : 1.0));
  }
  const timing::Steadiness wide = timing::steadiness(bimodal, 3);
  EXPECT_TRUE(timing::unsteady(wide, wide.median));
  // Tight, but 4.4x the fastest run of the same candidate.
  timing::Steadiness slow = quiet;
  slow.median = 4.4 * quiet.median;
  EXPECT_TRUE(timing::unsteady(slow, quiet.median));
  EXPECT_FALSE(timing::unsteady(timing::Steadiness{}, 1.0));  // no samples: nothing to judge
  EXPECT_TRUE(timing::steadier(quiet, wide, quiet.median));    // steady beats unsteady
  EXPECT_FALSE(timing::steadier(wide, quiet, quiet.median));
  timing::Steadiness quieter = quiet;
  quieter.median = 0.99 * quiet.median;
  EXPECT_TRUE(timing::steadier(quieter, quiet, quieter.median));  // both steady: the lower median
  EXPECT_FALSE(timing::steadier(quiet, quieter, quieter.median));
}

TEST(TimingRoofline, TheLargerTermBinds) {
  timing::Roofline mem = timing::roofline(1e6, 4e9, 1e12, 2e12);  // 1 us compute, 2 ms memory
  EXPECT_DOUBLE_EQ(mem.seconds, 2e-3);
  EXPECT_STREQ(mem.bound, "memory");
  timing::Roofline comp = timing::roofline(2e12, 1e6, 1e12, 2e12);
  EXPECT_DOUBLE_EQ(comp.seconds, 2.0);
  EXPECT_STREQ(comp.bound, "compute");
  // Unknown peaks give no floor rather than a division by zero.
  EXPECT_DOUBLE_EQ(timing::roofline(1e6, 1e6, 0, 0).seconds, 0);
}

TEST(TimingResources, ParsesCuobjdumpResourceUsage) {
  const std::string text =
      "\nResource usage:\n"
      " Common:\n  GLOBAL:0\n"
      " Function _Z11relu_kernelIfEvPKT_PS0_l:\n"
      "  REG:16 STACK:0 SHARED:0 LOCAL:0 CONSTANT[0]:380 TEXTURE:0 SURFACE:0 SAMPLER:0\n"
      " Function _Z13matmul_kernelIN3c104HalfEEvPKT_S4_PS2_iii:\n"
      "  REG:255 STACK:48 SHARED:16384 LOCAL:48 CONSTANT[0]:388 TEXTURE:0 SURFACE:0 SAMPLER:0\n";
  auto k = timing::parse_resource_usage(text);
  ASSERT_EQ(k.size(), 2u);
  EXPECT_EQ(k[0].function, "_Z11relu_kernelIfEvPKT_PS0_l");
  EXPECT_EQ(k[0].registers, 16);
  EXPECT_EQ(k[0].local_bytes, 0);
  EXPECT_EQ(k[1].registers, 255);
  EXPECT_EQ(k[1].shared_bytes, 16384);
  EXPECT_EQ(k[1].local_bytes, 48);
  EXPECT_EQ(k[1].stack_bytes, 48);
  EXPECT_TRUE(timing::parse_resource_usage("no cuda here").empty());
}

TEST(TimingWire, RequestReplyAndPeaksRoundTrip) {
  wire::TimeRequest req;
  wire::Arg t;
  t.tensor = at::arange(6, at::kFloat).reshape({2, 3});
  wire::Arg dim;
  dim.kind = wire::Arg::Kind::Int;
  dim.i = -1;
  req.sets = {{t, dim}, {t, dim}};
  req.baseline_op = "softmax";
  req.min_iterations = 7;
  req.max_iterations = 70;
  req.budget_seconds = 0.25;
  req.flush_bytes = 1 << 20;
  req.threads = 3;
  wire::TimeRequest back;
  std::string why;
  ASSERT_TRUE(wire::decode(wire::encode(req), &back, &why)) << why;
  ASSERT_EQ(back.sets.size(), 2u);
  EXPECT_TRUE(at::equal(back.sets[1][0].tensor, t.tensor));
  EXPECT_EQ(back.sets[1][1].i, -1);
  EXPECT_EQ(back.baseline_op, "softmax");
  EXPECT_EQ(back.min_iterations, 7u);
  EXPECT_EQ(back.max_iterations, 70u);
  EXPECT_DOUBLE_EQ(back.budget_seconds, 0.25);
  EXPECT_EQ(back.flush_bytes, uint64_t(1) << 20);
  EXPECT_EQ(back.threads, 3);

  wire::TimeReply rep;
  rep.timer = "cuda-events";
  rep.device = "NVIDIA H200";
  rep.l2_bytes = 52428800;
  rep.verified = {{t.tensor}, {t.tensor * 2}};
  rep.candidate_ms = {0.5, 0.25};
  rep.baseline_ms = {0.75};
  rep.iterations = 2;
  rep.mismatches = 1;
  rep.first_mismatch_set = 1;
  rep.first_mismatch_call = 9;
  rep.mismatch_outputs = {t.tensor * 3};
  wire::TimeReply rback;
  ASSERT_TRUE(wire::decode(wire::encode(rep), &rback, &why)) << why;
  EXPECT_EQ(rback.device, "NVIDIA H200");
  EXPECT_EQ(rback.l2_bytes, 52428800);
  ASSERT_EQ(rback.verified.size(), 2u);
  EXPECT_TRUE(at::equal(rback.verified[1][0], t.tensor * 2));
  EXPECT_EQ(rback.candidate_ms, rep.candidate_ms);
  EXPECT_EQ(rback.baseline_ms, rep.baseline_ms);
  EXPECT_EQ(rback.first_mismatch_set, 1);
  EXPECT_EQ(rback.first_mismatch_call, 9u);
  EXPECT_TRUE(at::equal(rback.mismatch_outputs[0], t.tensor * 3));
  EXPECT_TRUE(rback.phase_seconds.empty());  // absent unless the worker measured them
  rep.phase_seconds = {0.01, 0.02, 0.03, 0.25};
  const std::string with_phases = wire::encode(rep);
  ASSERT_TRUE(wire::decode(with_phases, &rback, &why)) << why;
  EXPECT_EQ(rback.phase_seconds, rep.phase_seconds);
  EXPECT_FALSE(wire::decode(with_phases.substr(0, with_phases.size() - 4), &rback, &why)) << "a cut phase section was accepted";

  wire::DevicePeaks p{"NVIDIA H200", 4.1e12, 4.9e14, 7.5e14, 7.4e14, "test"};
  wire::DevicePeaks pback;
  ASSERT_TRUE(wire::decode(wire::encode(p), &pback, &why)) << why;
  EXPECT_EQ(pback.device, p.device);
  EXPECT_DOUBLE_EQ(pback.matmul_flops_f16, 7.5e14);
}

// The GPU turn handshake flag travels as one trailing byte, and only when set: a request without
// it is byte for byte what workers that predate it decode.
TEST(TimingWire, TurnHandshakeIsATrailingByteOnlyWhenSet) {
  wire::TimeRequest req;
  wire::Arg t;
  t.tensor = at::ones({4});
  req.sets = {{t}};
  const std::string plain = wire::encode(req);
  req.turn_handshake = true;
  const std::string asking = wire::encode(req);
  ASSERT_EQ(asking.size(), plain.size() + 1);
  EXPECT_EQ(asking.substr(0, plain.size()), plain);
  wire::TimeRequest back;
  std::string why;
  ASSERT_TRUE(wire::decode(asking, &back, &why)) << why;
  EXPECT_TRUE(back.turn_handshake);
  ASSERT_TRUE(wire::decode(plain, &back, &why)) << why;
  EXPECT_FALSE(back.turn_handshake);
}

TEST(TimingWire, TruncatedOrInconsistentMessagesAreRejected) {
  wire::TimeRequest req;
  wire::Arg t;
  t.tensor = at::ones({4});
  req.sets = {{t}};
  std::string bytes = wire::encode(req);
  wire::TimeRequest back;
  std::string why;
  EXPECT_FALSE(wire::decode(bytes.substr(0, bytes.size() - 3), &back, &why));
  EXPECT_FALSE(wire::decode(bytes + "xx", &back, &why));  // one byte would read as the handshake flag
  req.min_iterations = 20;
  req.max_iterations = 10;  // min above max
  EXPECT_FALSE(wire::decode(wire::encode(req), &back, &why));
  req.sets.clear();  // nothing to time
  req.min_iterations = 1;
  EXPECT_FALSE(wire::decode(wire::encode(req), &back, &why));
}

}  // namespace
}  // namespace gauntlet
