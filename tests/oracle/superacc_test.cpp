// Tests of the cpp_int superaccumulator and the exact oracles: known exact sums, ties, overflow, subnormals.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "gauntlet/common/numerics.h"
#include "gauntlet/oracle/superacc.h"

using namespace gauntlet;

namespace {

double sum_of(std::initializer_list<double> xs, DType dt) {
  SuperAccumulator a;
  for (double x : xs) a.add(x);
  return a.round_to(dt);
}

}  // namespace

TEST(Superacc, SwampedTermsSurvive) {
  EXPECT_EQ(sum_of({1e30, 1, -1e30}, DType::Float64), 1.0);
  EXPECT_EQ(sum_of({1e300, 1e-300, -1e300}, DType::Float64), 1e-300);
  // Smallest and largest doubles in one sum.
  const double tiny = std::numeric_limits<double>::denorm_min(), big = std::numeric_limits<double>::max();
  EXPECT_EQ(sum_of({big, tiny, -big}, DType::Float64), tiny);
  // 2^24 + 1 + 1 + ... in float32 order would stay 2^24; exactly it is 2^24 + 8.
  SuperAccumulator a;
  a.add(16777216.0);
  for (int i = 0; i < 8; ++i) a.add(1.0);
  EXPECT_EQ(a.round_to(DType::Float32), 16777224.0);
  EXPECT_TRUE(SuperAccumulator().is_zero());
  EXPECT_EQ(sum_of({}, DType::Float32), 0.0);
}

TEST(Superacc, RoundsTiesToEven) {
  // float32: 1 + 2^-24 is halfway between 1 and 1 + 2^-23: even is 1.
  EXPECT_EQ(sum_of({1.0, std::ldexp(1.0, -24)}, DType::Float32), 1.0);
  // 1 + 3*2^-24 is halfway between 1 + 2^-23 (odd) and 1 + 2^-22 (even).
  EXPECT_EQ(sum_of({1.0, 3 * std::ldexp(1.0, -24)}, DType::Float32), 1.0 + std::ldexp(1.0, -22));
  // Just above the tie (a bit far below, which double rounding through float64 would lose).
  EXPECT_EQ(sum_of({1.0, std::ldexp(1.0, -24), std::ldexp(1.0, -80)}, DType::Float32), 1.0 + std::ldexp(1.0, -23));
  EXPECT_EQ(sum_of({1.0, std::ldexp(1.0, -11), std::ldexp(1.0, -70)}, DType::Float16), 1.0 + std::ldexp(1.0, -10));
  // float16: 2048 + 1 ties to 2048; 2048 + 3 ties to 2052.
  EXPECT_EQ(sum_of({2048, 1}, DType::Float16), 2048.0);
  EXPECT_EQ(sum_of({2048, 3}, DType::Float16), 2052.0);
  // bfloat16: 8 bits: 256 + 1 ties to 256, 256 + 1.5 rounds up to 258.
  EXPECT_EQ(sum_of({256, 1}, DType::BFloat16), 256.0);
  EXPECT_EQ(sum_of({256, 1.5}, DType::BFloat16), 258.0);
  EXPECT_EQ(sum_of({-256, -1.5}, DType::BFloat16), -258.0);
}

TEST(Superacc, AgreesWithCorrectRoundingOfDoubles) {
  // A double's own rounding to each dtype is num::round_to's; a one-term sum must match it.
  for (double x : {0.1, -3.14159, 65519.0, 65520.0, 1e-6, 3e38, 1e-40, -7.5e-8}) {
    for (DType dt : {DType::Float32, DType::Float16, DType::BFloat16, DType::Float64})
      EXPECT_EQ(sum_of({x}, dt), num::round_to(dt, x)) << x << " " << dtype_name(dt);
  }
}

TEST(Superacc, OverflowsToInfinityAsIEEE) {
  // float16: max 65504; 65519.99 rounds down, 65520 (the halfway point) overflows.
  EXPECT_EQ(sum_of({65504, 15.99}, DType::Float16), 65504.0);
  EXPECT_EQ(sum_of({65504, 16}, DType::Float16), INFINITY);
  EXPECT_EQ(sum_of({-65504, -16}, DType::Float16), -INFINITY);
  // Partial sums far past the range, exact result representable.
  EXPECT_EQ(sum_of({60000, 60000, -60000, -59000}, DType::Float16), 1000.0);
  const double fmax = std::numeric_limits<float>::max();
  EXPECT_EQ(sum_of({fmax, fmax, -fmax}, DType::Float32), fmax);
  EXPECT_EQ(sum_of({fmax, fmax}, DType::Float32), INFINITY);
  EXPECT_EQ(sum_of({1e308, 1e308}, DType::Float64), INFINITY);
  EXPECT_TRUE(std::isnan(sum_of({INFINITY, -INFINITY}, DType::Float32)));
  EXPECT_TRUE(std::isnan(sum_of({1, NAN}, DType::Float16)));
  EXPECT_EQ(sum_of({INFINITY, 1e308, 1e308}, DType::Float32), INFINITY);
}

TEST(Superacc, SubnormalResults) {
  const double f16_min_sub = std::ldexp(1.0, -24), f32_min_sub = std::ldexp(1.0, -149);
  EXPECT_EQ(sum_of({1.0, f16_min_sub, -1.0}, DType::Float16), f16_min_sub);
  // Half the smallest float16 subnormal ties to 0; a little more rounds up to it.
  EXPECT_EQ(sum_of({f16_min_sub / 2}, DType::Float16), 0.0);
  EXPECT_EQ(sum_of({f16_min_sub / 2, f16_min_sub / 1024}, DType::Float16), f16_min_sub);
  EXPECT_EQ(sum_of({3 * f32_min_sub, std::ldexp(1.0, -200)}, DType::Float32), 3 * f32_min_sub);
  EXPECT_EQ(sum_of({std::ldexp(1.0, -140), -std::ldexp(1.0, -140), f32_min_sub}, DType::Float32), f32_min_sub);
}

TEST(Superacc, ProductsAndQuotientsAreExact) {
  SuperAccumulator a;
  // (1 + 2^-23)^2 = 1 + 2^-22 + 2^-46 in float32 terms: exact in the accumulator, and a product
  // whose double rounding is inexact is completed by the FMA residual.
  const double x = 1.0 + std::ldexp(1.0, -23);
  a.add_product(x, x);
  a.add(-1.0);
  EXPECT_EQ(a.round_to(DType::Float64), std::ldexp(1.0, -22) + std::ldexp(1.0, -46));
  SuperAccumulator b;
  const double y = 1.0 + std::ldexp(1.0, -52);
  b.add_product(y, y);
  b.add(-1.0);
  b.add(-std::ldexp(1.0, -51));
  EXPECT_EQ(b.round_to(DType::Float64), std::ldexp(1.0, -104));
  // Quotients: 1/3 and 2/3 correctly rounded, 10/4 exact, 7/2 in float16.
  SuperAccumulator one;
  one.add(1.0);
  EXPECT_EQ(one.round_quotient(DType::Float64, 3), 1.0 / 3.0);
  EXPECT_EQ(one.round_quotient(DType::Float32, 3), double(1.0f / 3.0f));
  SuperAccumulator ten;
  ten.add(10.0);
  EXPECT_EQ(ten.round_quotient(DType::Float16, 4), 2.5);
  // float16: 2049/1 ties to 2048; 2049.5/1... as a quotient: 4097/2 = 2048.5 rounds to 2048,
  // 4099/2 = 2049.5 rounds to 2050 (nearest), and a remainder far below decides a near-tie.
  SuperAccumulator n;
  n.add(4097.0);
  EXPECT_EQ(n.round_quotient(DType::Float16, 2), 2048.0);
  n.add(2.0);
  EXPECT_EQ(n.round_quotient(DType::Float16, 2), 2050.0);
  SuperAccumulator t;  // (2048 + 1) * 3 + 1, over 3: 2049 + 1/3, just above the tie: 2050
  t.add(6148.0);
  EXPECT_EQ(t.round_quotient(DType::Float16, 3), 2050.0);
  EXPECT_TRUE(std::isnan(SuperAccumulator().round_quotient(DType::Float32, 0)));
}

TEST(Superacc, ExactOracleSumsAndDotProducts) {
  bool supported = false;
  // sum over dim 1 of [[1e30, 1, -1e30]] in float32 values: 1 exactly (ATen float64 agrees here).
  at::Tensor x = at::tensor({float(1e30), 1.0f, float(-1e30), 2048.0f, 1.0f, 1.0f}, at::kFloat).reshape({2, 3});
  AttrMap attrs{{"dim", int64_t(-1)}};
  OracleResult r = run_exact_oracle("sum", {x}, attrs, DType::Float32, &supported);
  ASSERT_TRUE(supported);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.outputs[0][0].item<double>(), 1.0);
  EXPECT_EQ(r.outputs[0][1].item<double>(), 2050.0);
  // In float16 2048 + 1 + 1 = 2050 exactly (representable) though a float16 running sum gives 2048.
  OracleResult h = run_exact_oracle("sum", {x.to(at::kHalf).nan_to_num(0)}, attrs, DType::Float16, &supported);
  ASSERT_TRUE(h.ok()) << h.error;
  EXPECT_EQ(h.outputs[0][1].item<double>(), 2050.0);
  OracleResult c = run_exact_oracle("cumsum", {x}, attrs, DType::Float32, &supported);
  ASSERT_TRUE(c.ok()) << c.error;
  EXPECT_EQ(c.outputs[0][0][1].item<double>(), double(1e30f));
  EXPECT_EQ(c.outputs[0][0][2].item<double>(), 1.0);
  OracleResult m = run_exact_oracle("mean", {x}, attrs, DType::Float32, &supported);
  ASSERT_TRUE(m.ok()) << m.error;
  EXPECT_EQ(m.outputs[0][0].item<double>(), double(1.0f / 3.0f));
  // matmul: a row (1e30, 1, -1e30) times ones: exactly 1; bmm and linear_relu agree.
  at::Tensor a = x.slice(0, 0, 1);
  at::Tensor b = at::ones({3, 2}, at::kFloat);
  OracleResult mm = run_exact_oracle("matmul", {a, b}, {}, DType::Float32, &supported);
  ASSERT_TRUE(mm.ok()) << mm.error;
  EXPECT_EQ(mm.outputs[0][0][1].item<double>(), 1.0);
  OracleResult bm = run_exact_oracle("bmm", {a.unsqueeze(0), b.unsqueeze(0)}, {}, DType::Float32, &supported);
  ASSERT_TRUE(bm.ok()) << bm.error;
  EXPECT_EQ(bm.outputs[0][0][0][0].item<double>(), 1.0);
  at::Tensor bias = at::tensor({-2.0f, 0.5f}, at::kFloat);
  OracleResult lr = run_exact_oracle("linear_relu", {a, b.t().contiguous(), bias}, {}, DType::Float32, &supported);
  ASSERT_TRUE(lr.ok()) << lr.error;
  EXPECT_EQ(lr.outputs[0][0][0].item<double>(), 0.0);
  EXPECT_EQ(lr.outputs[0][0][1].item<double>(), 1.5);
  // segment_sum: rows 0..2 as one segment, an empty one, row 3 alone. Column 0 sums 2048 + 1 + 1
  // = 2050 (a float16 value a float16 running sum misses), column 1 1e30 - 1e30 + 1 = 1 exactly.
  const at::Tensor rows = at::tensor({2048.0f, float(1e30), 1.0f, float(-1e30), 1.0f, 1.0f, 1.0f, 5.0f}, at::kFloat)
                              .reshape({4, 2});
  const at::Tensor offsets = at::tensor(std::vector<int64_t>{0, 3, 3, 4}, at::kLong);
  OracleResult seg = run_exact_oracle("segment_sum", {rows, offsets}, {}, DType::Float16, &supported);
  ASSERT_TRUE(supported);
  ASSERT_TRUE(seg.ok()) << seg.error;
  ASSERT_EQ(seg.outputs[0].sizes().vec(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(seg.outputs[0][0][0].item<double>(), 2050.0);
  EXPECT_EQ(seg.outputs[0][0][1].item<double>(), 1.0);
  EXPECT_EQ(seg.outputs[0][1][0].item<double>(), 0.0) << "an empty segment";
  EXPECT_EQ(seg.outputs[0][2][1].item<double>(), 5.0);
  ASSERT_EQ(seg.scales.size(), 1u);
  EXPECT_EQ(seg.scales[0][0][0].item<double>(), 2050.0) << "sum |x| of the segment";
  // Offsets past the rows are refused, never read.
  const at::Tensor past = at::tensor(std::vector<int64_t>{0, 3, 5}, at::kLong);
  EXPECT_FALSE(run_exact_oracle("segment_sum", {rows, past}, {}, DType::Float32, &supported).ok());
  // group_by_sum (keys first) and scatter_add (index second): 2048 + 1 + 1 in group 1 is 2050
  // exactly (float16 holds it; a float16 running sum stalls at 2048), group 0 cancels to 1, group 2
  // is empty (0), and the scale is sum |values| of the group.
  const at::Tensor gv = at::tensor({2048.0f, float(1e30), 1.0f, float(-1e30), 1.0f, 1.0f}, at::kFloat);
  const at::Tensor gk = at::tensor(std::vector<int64_t>{1, 0, 1, 0, 1, 0}, at::kLong);
  for (const char* op : {"group_by_sum", "scatter_add"}) {
    const bool keys_first = std::string(op) == "group_by_sum";
    const AttrMap ga = {{keys_first ? "num_groups" : "size", int64_t(3)}};
    OracleResult g = run_exact_oracle(op, keys_first ? std::vector<at::Tensor>{gk, gv} : std::vector<at::Tensor>{gv, gk}, ga,
                                      DType::Float16, &supported);
    ASSERT_TRUE(supported) << op;
    ASSERT_TRUE(g.ok()) << op << ": " << g.error;
    ASSERT_EQ(g.outputs[0].sizes().vec(), (std::vector<int64_t>{3})) << op;
    EXPECT_EQ(g.outputs[0][0].item<double>(), 1.0) << op;
    EXPECT_EQ(g.outputs[0][1].item<double>(), 2050.0) << op;
    EXPECT_EQ(g.outputs[0][2].item<double>(), 0.0) << op << ": an empty group";
    EXPECT_EQ(g.scales[0][1].item<double>(), 2050.0) << op;
    // A key past the groups is refused, never used as an index.
    const at::Tensor past = at::tensor(std::vector<int64_t>{1, 0, 3, 0, 1, 0}, at::kLong);
    EXPECT_FALSE(
        run_exact_oracle(op, keys_first ? std::vector<at::Tensor>{past, gv} : std::vector<at::Tensor>{gv, past}, ga,
                         DType::Float32, &supported)
            .ok())
        << op;
  }
  EXPECT_FALSE(has_exact_oracle("softmax"));
  run_exact_oracle("softmax", {x}, attrs, DType::Float32, &supported);
  EXPECT_FALSE(supported);
}
