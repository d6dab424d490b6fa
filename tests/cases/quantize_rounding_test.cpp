// The quantize-rounding tolerance (judge.cpp) with the quantize oracle's admissible levels, on values
// of the "quantizable" value domain (case.cpp): a division quantizer passes, half away from zero fails.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "gauntlet/cases/case.h"
#include "gauntlet/cases/judge.h"
#include "gauntlet/oracle/oracle.h"

namespace gauntlet {
namespace {

Tolerance quantize_rounding() {
  Tolerance t;
  t.mode = "quantize-rounding";
  t.reason = "test";
  return t;
}

// x of the quantizable domain for one scale and zero point (the accuracy gate's normal draw).
at::Tensor grid_values(double scale, int64_t zero_point, uint64_t seed, Distribution d = Distribution::Normal) {
  TensorRecipe r;
  r.name = "x";
  r.shape = {4096};
  r.distribution = d;
  r.grid_scale = scale;
  r.grid_zero_point = zero_point;
  r.low = -128;
  r.high = 128;
  r.seed = seed;
  r.stream = 0;
  return materialize(r);
}

int8_t saturate(double level, int64_t zp) { return int8_t(std::min(127.0, std::max(-128.0, level + double(zp)))); }

// A quantizer computing each level as `level(x, float32 scale)`.
template <typename F>
at::Tensor quantizer(const at::Tensor& x, double scale, int64_t zp, F level) {
  at::Tensor q = at::empty(x.sizes(), at::kChar);
  const float* p = x.data_ptr<float>();
  for (int64_t i = 0; i < x.numel(); ++i) q.data_ptr<int8_t>()[i] = saturate(level(p[i], float(scale)), zp);
  return q;
}

Judgement judge(const at::Tensor& x, double scale, int64_t zp, const at::Tensor& out) {
  const OracleResult r = run_oracle("quantize_per_tensor", {x}, {{"scale", scale}, {"zero_point", zp}});
  EXPECT_TRUE(r.ok()) << r.error;
  if (!r.ok()) return {};
  return judge_output("q", out, r.outputs[0], r.scales[0], DType::Int8, quantize_rounding(), 1);
}

TEST(QuantizeRounding, TorchsProductTheFloat32QuotientAndTheExactQuotientAllPass) {
  for (double scale : {double(0.1f), double(1.0f / 3.0f), double(0.037f), 0.5, 7.5, std::ldexp(1.0, -127)}) {
    for (int64_t zp : {int64_t(-128), int64_t(-3), int64_t(0), int64_t(127)}) {
      const at::Tensor x = grid_values(scale, zp, 7);
      SCOPED_TRACE("scale " + std::to_string(scale) + " zero point " + std::to_string(zp));
      const at::Tensor product = quantizer(x, scale, zp, [](float v, float s) { return std::nearbyint(double(v * (1.0f / s))); });
      const at::Tensor quotient = quantizer(x, scale, zp, [](float v, float s) { return std::nearbyint(double(v / s)); });
      // Division in double then rounded: the exact quotient's rounding, but for a double rounding
      // exactly onto a boundary, which a float32 x and scale cannot produce at these magnitudes.
      const at::Tensor exact = quantizer(x, scale, zp, [](float v, float s) { return std::nearbyint(double(v) / double(s)); });
      for (const at::Tensor* q : {&product, &quotient, &exact}) {
        const Judgement j = judge(x, scale, zp, *q);
        EXPECT_TRUE(j.pass) << j.message;
      }
    }
  }
}

// With a power-of-two scale x / scale is exact in every variant, so the grid's exact ties have one
// admissible level: half away from zero (std::round) fails there, and only there.
TEST(QuantizeRounding, HalfAwayFromZeroFailsAtExactTies) {
  for (double scale : {0.5, std::ldexp(1.0, -100), std::ldexp(1.0, -127), std::ldexp(1.0, 100)}) {
    for (int64_t zp : {int64_t(-127), int64_t(0), int64_t(5)}) {
      SCOPED_TRACE("scale " + std::to_string(scale) + " zero point " + std::to_string(zp));
      const at::Tensor x = grid_values(scale, zp, 11);
      const at::Tensor away = quantizer(x, scale, zp, [](float v, float s) { return std::round(double(v * (1.0f / s))); });
      const Judgement j = judge(x, scale, zp, away);
      EXPECT_FALSE(j.pass);
      EXPECT_GT(j.bad, 0);
      // Every element it gets wrong is a tie: x / scale is k + 0.5 exactly.
      const float* p = x.data_ptr<float>();
      int64_t ties = 0;
      for (int64_t i = 0; i < x.numel(); ++i) {
        const double q = double(p[i]) / scale;
        if (std::isfinite(q) && q - std::floor(q) == 0.5) ++ties;
      }
      EXPECT_GT(ties, 300) << "the domain lays 10% of its values on exact boundaries";
      EXPECT_LE(j.bad, ties);
    }
  }
}

// Nothing else: a level off by one where the oracle names no other, or off by two, fails.
TEST(QuantizeRounding, AnythingButTheAdmissibleLevelsFails) {
  // 0.1f: 0.35f and float(4.5 * 0.1f) are exact ties of the float32 product (levels 4 and 4) whose
  // exact quotients round to 3 and 5; 0.3f is no tie (3 only).
  const double s = double(0.1f);
  const at::Tensor x = at::tensor(std::vector<float>{0.35f, 0.3f, float(4.5 * s)}, at::kFloat);
  EXPECT_TRUE(judge(x, s, 0, at::tensor(std::vector<int64_t>{3, 3, 5}).to(at::kChar)).pass) << "the exact quotient's";
  EXPECT_TRUE(judge(x, s, 0, at::tensor(std::vector<int64_t>{4, 3, 4}).to(at::kChar)).pass) << "torch's";
  EXPECT_FALSE(judge(x, s, 0, at::tensor(std::vector<int64_t>{5, 3, 4}).to(at::kChar)).pass) << "0.35 -> 5";
  EXPECT_FALSE(judge(x, s, 0, at::tensor(std::vector<int64_t>{4, 4, 4}).to(at::kChar)).pass) << "0.3 -> 4";
  EXPECT_FALSE(judge(x, s, 0, at::tensor(std::vector<int64_t>{4, 3, 6}).to(at::kChar)).pass) << "0.45 -> 6";
}

// A quantizer that wraps instead of saturating fails on the domain's values past the limits.
TEST(QuantizeRounding, WrapAroundFailsOnTheDomainsSaturatingValues) {
  const double s = double(0.1f);
  const at::Tensor x = grid_values(s, 0, 3);
  const at::Tensor wrapped = at::empty(x.sizes(), at::kChar);
  const float* p = x.data_ptr<float>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double level = std::nearbyint(double(p[i] * (1.0f / float(s))));
    wrapped.data_ptr<int8_t>()[i] = std::fabs(level) < 1e9 ? int8_t(uint32_t(int64_t(level))) : int8_t(0);
  }
  EXPECT_FALSE(judge(x, s, 0, wrapped).pass);
}

// The domain's values: exact boundaries, their float32 neighbours, saturating and huge values, and
// for the KernelBench-style check's U[0,1) only scaled values; a replay file records the grid.
TEST(QuantizableDomain, LaysBoundariesNeighboursAndSaturationOnTheGrid) {
  const double s = 0.5;
  const at::Tensor x = grid_values(s, 5, 21);
  const float* p = x.data_ptr<float>();
  int64_t ties = 0, neighbours = 0, saturating = 0, huge = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double q = double(p[i]) / s;
    if (std::fabs(q) > 1e30) ++huge;
    else if (q + 5 > 127.5 || q + 5 < -128.5) ++saturating;
    if (q - std::floor(q) == 0.5) ++ties;
    const double up = double(std::nextafter(p[i], 0.0f)) / s, down = double(std::nextafter(p[i], 2 * p[i])) / s;
    if (up - std::floor(up) == 0.5 || down - std::floor(down) == 0.5) ++neighbours;
  }
  EXPECT_GT(ties, 300);       // 10% of the values
  EXPECT_GT(neighbours, 400);  // 15%
  EXPECT_GT(saturating, 400);
  EXPECT_GT(huge, 100);
  const at::Tensor plain = grid_values(s, 5, 21, Distribution::Uniform01);
  EXPECT_GE(plain.min().item<float>(), 0.0f);
  EXPECT_LT(plain.max().item<float>(), float(64 * s));
  Case c;
  c.tensors.resize(1);
  c.tensors[0].name = "x";
  c.tensors[0].shape = {8};
  c.tensors[0].grid_scale = s;
  c.tensors[0].grid_zero_point = 5;
  c.tensors[0].low = -128;
  c.tensors[0].high = 128;
  Case back;
  std::string error;
  ASSERT_TRUE(case_from_json(case_to_json(c), &back, &error)) << error;
  EXPECT_EQ(back.tensors[0].grid_scale, s);
  EXPECT_EQ(back.tensors[0].grid_zero_point, 5);
  EXPECT_EQ(back.tensors[0].low, -128);
  EXPECT_EQ(back.tensors[0].high, 128);
  EXPECT_TRUE(at::equal(materialize(back.tensors[0]), materialize(c.tensors[0])));
}

}  // namespace
}  // namespace gauntlet
