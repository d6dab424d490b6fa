// Tests of judging: exact, ulp and reduction modes, NaN/Inf parity, overflow, vacuity, evidence.
#include <gtest/gtest.h>

#include <cmath>

#include "gauntlet/cases/judge.h"
#include "gauntlet/common/numerics.h"

using namespace gauntlet;

namespace {

Tolerance mode(const std::string& m, double ulps = 0, double c = 0) {
  Tolerance t;
  t.mode = m;
  t.ulps = ulps;
  t.c = c;
  t.reason = "test";
  return t;
}

at::Tensor d(std::vector<double> v) { return at::tensor(v, at::kDouble); }

TEST(Judge, ExactPassesCorrectlyRoundedAndFailsOneUlpOff) {
  at::Tensor ref = d({1.0 / 3.0, 2.0, -0.0});
  at::Tensor good = ref.to(at::kHalf);
  EXPECT_TRUE(judge_output("y", good, ref, {}, DType::Float16, mode("exact"), 1).pass);
  at::Tensor bad = good.clone();
  bad[0] = at::Half(num::from_bits(DType::Float16, num::to_bits(DType::Float16, double(float(good[0].item<float>()))) + 1));
  Judgement j = judge_output("y", bad, ref, {}, DType::Float16, mode("exact"), 1);
  EXPECT_FALSE(j.pass);
  EXPECT_EQ(j.bad, 1);
  EXPECT_EQ(j.worst_index, 0);
  EXPECT_NE(j.message.find("y[0]"), std::string::npos);
}

TEST(Judge, UlpModeCountsRepresentableSteps) {
  const double one = 1.0;
  const double next = std::nextafter(1.0f, 2.0f);
  const double third = std::nextafter(float(next), 2.0f);
  at::Tensor ref = d({one});
  EXPECT_TRUE(judge_output("y", d({next}), ref, {}, DType::Float32, mode("ulp", 1), 1).pass);
  EXPECT_FALSE(judge_output("y", d({third}), ref, {}, DType::Float32, mode("ulp", 1), 1).pass);
}

TEST(Judge, NanParityIsExactInEveryMode) {
  at::Tensor ref = d({NAN, 1.0});
  EXPECT_TRUE(judge_output("y", d({NAN, 1.0}), ref, {}, DType::Float32, mode("reduction", 2, 8), 16).pass);
  Judgement missing = judge_output("y", d({0.0, 1.0}), ref, {}, DType::Float32, mode("reduction", 2, 1e9), 16);
  EXPECT_FALSE(missing.pass);
  EXPECT_EQ(missing.nonfinite_mismatch, 1);
  Judgement extra = judge_output("y", d({1.0, NAN}), d({1.0, 2.0}), {}, DType::Float32, mode("ulp", 1e6), 1);
  EXPECT_FALSE(extra.pass);
}

TEST(Judge, InfinitySignMustMatch) {
  at::Tensor ref = d({INFINITY});
  EXPECT_TRUE(judge_output("y", d({INFINITY}), ref, {}, DType::Float32, mode("exact"), 1).pass);
  EXPECT_FALSE(judge_output("y", d({-INFINITY}), ref, {}, DType::Float32, mode("exact"), 1).pass);
}

TEST(Judge, ReductionBoundGrowsWithSqrtKAndScale) {
  // sum of K=10000 terms, scale 10000: allowed = 2 ulp(ref) + 8 * 2^-24 * 100 * 10000
  const double ref = 5000.0, scale = 10000.0;
  const double allowed = allowed_error(DType::Float32, mode("reduction", 2, 8), ref, scale, 10000);
  EXPECT_NEAR(allowed, 2 * num::ulp_at(DType::Float32, ref) + 8 * std::ldexp(1.0, -24) * 100 * 10000, 1e-12);
  at::Tensor s = d({scale});
  EXPECT_TRUE(judge_output("y", d({ref + 0.9 * allowed}), d({ref}), s, DType::Float32, mode("reduction", 2, 8), 10000).pass);
  EXPECT_FALSE(judge_output("y", d({ref + 1.1 * allowed}), d({ref}), s, DType::Float32, mode("reduction", 2, 8), 10000).pass);
}

TEST(Judge, FloatSixteenAccumulatorErrorIsCaught) {
  // A float16 accumulator's error (~2^-11 * sqrt(K) * sum|x|) is far beyond the float32 bound.
  const int64_t K = 4096;
  const double sum_abs = 4096.0;
  const double err16 = std::ldexp(1.0, -11) * 64 * sum_abs;
  EXPECT_FALSE(judge_output("y", d({100 + err16}), d({100}), d({sum_abs}), DType::Float16, mode("reduction", 2, 8), K).pass);
}

TEST(Judge, OverflowToInfinityIsOneStepPastMax) {
  // The exact value is just above float16's max: a kernel that rounds to inf is right, and one
  // whose slightly different sum rounds to 65504 is within a 2-ulp reduction tolerance too.
  at::Tensor ref = d({65530.0});
  EXPECT_TRUE(judge_output("y", d({INFINITY}), ref, {}, DType::Float16, mode("reduction", 2, 8), 4).pass);
  EXPECT_TRUE(judge_output("y", d({65504.0}), ref, {}, DType::Float16, mode("reduction", 2, 8), 4).pass);
  EXPECT_FALSE(judge_output("y", d({-INFINITY}), ref, {}, DType::Float16, mode("reduction", 2, 8), 4).pass);
}

TEST(Judge, ConstantOrZeroReferenceIsVacuous) {
  EXPECT_TRUE(judge_output("y", d({0, 0, 0}), d({0, 0, 0}), {}, DType::Float32, mode("exact"), 1).vacuous);
  EXPECT_TRUE(judge_output("y", d({2, 2}), d({2, 2}), {}, DType::Float32, mode("exact"), 1).vacuous);
  EXPECT_FALSE(judge_output("y", d({1, 2}), d({1, 2}), {}, DType::Float32, mode("exact"), 1).vacuous);
}

TEST(Judge, SubnormalRangeIsLeftToTheSubnormalsGate) {
  const double tiny = num::limits(DType::Float32).min_subnormal * 100;
  EXPECT_TRUE(judge_output("y", d({0.0, 1.0}), d({tiny, 1.0}), {}, DType::Float32, mode("ulp", 1), 1).pass);
  JudgeOptions strict;
  strict.defer_subnormal_range = false;
  EXPECT_FALSE(judge_output("y", d({0.0, 1.0}), d({tiny, 1.0}), {}, DType::Float32, mode("ulp", 1), 1, strict).pass);
}

TEST(Judge, ElementCountMismatchFails) {
  EXPECT_FALSE(judge_output("y", d({1, 2}), d({1, 2, 3}), {}, DType::Float32, mode("exact"), 1).pass);
}

TEST(Judge, IndexTextIsRowMajor) {
  EXPECT_EQ(index_text({3, 4}, 7), "[1,3]");
  EXPECT_EQ(index_text({}, 0), "[]");
}

}  // namespace
