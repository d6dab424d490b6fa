// Tests of the filtered exact GEMM oracle: bit for bit the superaccumulated one, on random data and on ties.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "gauntlet/common/numerics.h"
#include "gauntlet/oracle/superacc.h"

using namespace gauntlet;

namespace {

uint64_t bits(double x) {
  uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

// Both paths on one case; every element must agree bit for bit (a zero's sign included).
ExactOracleStats expect_paths_agree(const std::string& op, const std::vector<at::Tensor>& in, DType out) {
  bool supported = false;
  ExactOracleStats filtered, all;
  OracleResult f = run_exact_oracle(op, in, {}, out, &supported, ExactPath::Filtered, &filtered);
  EXPECT_TRUE(supported);
  OracleResult r = run_exact_oracle(op, in, {}, out, &supported, ExactPath::SuperaccumulateAll, &all);
  EXPECT_TRUE(f.ok()) << f.error;
  EXPECT_TRUE(r.ok()) << r.error;
  if (!f.ok() || !r.ok()) return filtered;
  EXPECT_EQ(all.superaccumulated, all.outputs);
  EXPECT_EQ(filtered.outputs, all.outputs);
  const at::Tensor a = f.outputs[0].reshape({-1}), b = r.outputs[0].reshape({-1});
  EXPECT_EQ(a.numel(), b.numel());
  int64_t differ = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    if (bits(a[i].item<double>()) != bits(b[i].item<double>())) {
      if (differ++ < 3)
        ADD_FAILURE() << op << " " << dtype_name(out) << " element " << i << ": filtered " << a[i].item<double>()
                      << ", superaccumulated " << b[i].item<double>();
    }
  EXPECT_EQ(differ, 0);
  // Same scales as well: the tolerance must not move with the path.
  EXPECT_TRUE(f.scales.at(0).equal(r.scales.at(0)));
  return filtered;
}

at::Tensor in_dtype(const at::Tensor& t, at::ScalarType st) { return t.to(st).to(at::kFloat); }

}  // namespace

TEST(ExactGemm, FilteredAgreesWithSuperaccumulatingEveryElement) {
  at::manual_seed(7);
  const std::pair<at::ScalarType, DType> kinds[] = {
      {at::kFloat, DType::Float32}, {at::kHalf, DType::Float16}, {at::kBFloat16, DType::BFloat16}};
  for (const auto& [st, dt] : kinds) {
    // Random data: almost every element is decided by the float64 GEMM.
    const at::Tensor a = in_dtype(at::randn({24, 300}), st), b = in_dtype(at::randn({300, 20}), st);
    ExactOracleStats s = expect_paths_agree("matmul", {a, b}, dt);
    EXPECT_TRUE(s.filtered);
    EXPECT_EQ(s.outputs, 24 * 20);
    EXPECT_LT(s.superaccumulated, s.outputs / 10) << dtype_name(dt);
    // Cancellation: (x, -x + tiny) pairs along K, sums far below sum|products|.
    at::Tensor c = in_dtype(at::randn({16, 128}) * 1e4, st);
    c.slice(1, 64, 128).copy_(in_dtype(-c.slice(1, 0, 64) + at::randn({16, 64}) * 1e-3, st));
    expect_paths_agree("matmul", {c, at::ones({128, 8})}, dt);
    expect_paths_agree("bmm", {a.reshape({4, 6, 300}), in_dtype(at::randn({4, 300, 5}), st)}, dt);
    const at::Tensor w = in_dtype(at::randn({20, 300}), st), bias = in_dtype(at::randn({20}), st);
    expect_paths_agree("linear_relu", {a, w, bias}, dt);
    // Integer data (the accumulation gate's integer-exact plan): float64 is exact, no tie.
    const at::Tensor ia = at::randint(-8, 8, {8, 512}).to(at::kFloat), ib = at::randint(-3, 3, {512, 8}).to(at::kFloat);
    EXPECT_EQ(expect_paths_agree("matmul", {ia, ib}, dt).superaccumulated, 0) << dtype_name(dt);
    // Past 2048 half of float16's integers are ties: decided because float64 summed them exactly.
    const at::Tensor big = at::randint(0, 17, {8, 2048}).to(at::kFloat);
    EXPECT_EQ(expect_paths_agree("linear_relu", {big, at::ones({6, 2048}), at::randint(-9, 9, {6}).to(at::kFloat)}, dt)
                  .superaccumulated,
              0)
        << dtype_name(dt);
  }
}

TEST(ExactGemm, SumsAtATieGoToTheSuperaccumulator) {
  // Row i: 1 + 2^-24 (the float32 tie between 1 and 1 + 2^-23) plus a term below float64's reach
  // from 1: +2^-60 rounds up, -2^-60 down, 0 is the tie itself (to even: 1). The float64 GEMM
  // returns 1 + 2^-24 for all three; only the exact sum tells them apart.
  const float tail = std::ldexp(1.0f, -60);
  at::Tensor a = at::tensor({1.0f, std::ldexp(1.0f, -24), tail, 1.0f, std::ldexp(1.0f, -24), -tail, 1.0f,
                             std::ldexp(1.0f, -24), 0.0f}).reshape({3, 3});
  at::Tensor b = at::ones({3, 2});
  ExactOracleStats s = expect_paths_agree("matmul", {a, b}, DType::Float32);
  EXPECT_EQ(s.superaccumulated, 6);
  bool supported = false;
  OracleResult r = run_exact_oracle("matmul", {a, b}, {}, DType::Float32, &supported);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.outputs[0][0][0].item<double>(), 1.0 + std::ldexp(1.0, -23));
  EXPECT_EQ(r.outputs[0][1][0].item<double>(), 1.0);
  EXPECT_EQ(r.outputs[0][2][0].item<double>(), 1.0);
}

TEST(ExactGemm, AFloat64SumOffByUlpsNearATieIsNotTrusted) {
  // Exact sum 1 + 2^-24 - 2^-52 + 8 * 2^-54 = T + 2^-52, just past the float32 tie T = 1 + 2^-24:
  // rounds up to 1 + 2^-23. A float64 sum that adds the 2^-54 terms one by one to a value near 1
  // drops each (a quarter ulp), lands at T - 2^-52 and would round down to 1; only the bound (two
  // float64 ulps here, not one) sends such an element to the superaccumulator. The rows place the
  // small terms last, first and interleaved, so some summation order of the GEMM loses them.
  const float t = std::ldexp(1.0f, -54), tie = std::ldexp(1.0f, -24), back = -std::ldexp(1.0f, -52);
  const std::vector<std::vector<float>> rows = {
      {1, tie, back, t, t, t, t, t, t, t, t, 0, 0, 0, 0, 0},
      {t, t, t, t, t, t, t, t, 1, tie, back, 0, 0, 0, 0, 0},
      {1, t, t, tie, t, t, back, t, t, t, t, 0, 0, 0, 0, 0},
      {0, 0, 0, 0, 0, 1, t, tie, t, back, t, t, t, t, t, t}};
  at::Tensor a = at::empty({int64_t(rows.size()), 16});
  for (size_t i = 0; i < rows.size(); ++i)
    for (int64_t k = 0; k < 16; ++k) a[int64_t(i)][k] = rows[i][size_t(k)];
  for (int64_t n : {1, 3}) {
    expect_paths_agree("matmul", {a, at::ones({16, n})}, DType::Float32);
    bool supported = false;
    OracleResult r = run_exact_oracle("matmul", {a, at::ones({16, n})}, {}, DType::Float32, &supported);
    ASSERT_TRUE(r.ok()) << r.error;
    for (int64_t i = 0; i < int64_t(rows.size()); ++i)
      EXPECT_EQ(r.outputs[0][i][0].item<double>(), 1.0 + std::ldexp(1.0, -23)) << "row " << i << ", N=" << n;
  }
}

TEST(ExactGemm, ZerosAndUnfilterableInputsAreSuperaccumulated) {
  // An exact zero is +0 whatever float64's sum gives (here 2^-100 is lost beside 2^100, so too
  // wide a sum for float64 to be exact): decided term by term. Integer data summing to zero is
  // exact in float64 and decided there, as +0 too.
  const float big = std::ldexp(1.0f, 100), small = std::ldexp(1.0f, -100);
  at::Tensor a = at::tensor({big, small, -big, -small, -small, big, small, -big}).reshape({2, 4});
  ExactOracleStats s = expect_paths_agree("matmul", {a, at::ones({4, 3})}, DType::Float32);
  EXPECT_EQ(s.superaccumulated, 6);
  at::Tensor ints = at::tensor({3.0f, -3.0f, -0.5f, 0.5f}).reshape({2, 2});
  s = expect_paths_agree("matmul", {ints, at::ones({2, 3})}, DType::Float32);
  EXPECT_EQ(s.superaccumulated, 0);
  // Products that are all -0 (0 times negatives): float64 may sum them to -0; the exact zero is +0.
  s = expect_paths_agree("matmul", {at::zeros({2, 5}), -at::ones({5, 3})}, DType::Float16);
  EXPECT_EQ(s.superaccumulated, 0);
  // Values that are not float32 values (float64 data) or are not finite: no filter at all.
  at::Tensor d = at::tensor({1.0 + std::ldexp(1.0, -40), 2.0, 3.0, 4.0}, at::kDouble).reshape({2, 2});
  s = expect_paths_agree("matmul", {d, at::ones({2, 2}, at::kDouble)}, DType::Float32);
  EXPECT_FALSE(s.filtered);
  EXPECT_EQ(s.superaccumulated, s.outputs);
  at::Tensor inf = at::tensor({INFINITY, 1.0f, 2.0f, 3.0f}).reshape({2, 2});
  s = expect_paths_agree("matmul", {inf, at::ones({2, 2})}, DType::Float32);
  EXPECT_FALSE(s.filtered);
}

TEST(ExactGemm, OverflowToInfinityIsDecidedByTheBound) {
  // float16 output: sums past 65520 round to inf; both ends of the bound do, so no term-by-term sum.
  at::Tensor a = at::full({4, 64}, 60000.0f);
  ExactOracleStats s = expect_paths_agree("matmul", {a, at::ones({64, 4})}, DType::Float16);
  EXPECT_EQ(s.superaccumulated, 0);
}
