// Tests for src/common/rng.cpp: Philox known answers, pinned portable outputs, distributions.
#include "gauntlet/common/rng.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

namespace gauntlet::rng {
namespace {

uint64_t bits_of(double x) {
  uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

// Distance in ULPs between two finite doubles of the same sign.
uint64_t ulps_between(double a, double b) {
  const uint64_t x = bits_of(a), y = bits_of(b);
  return x > y ? x - y : y - x;
}

using Block = std::array<uint32_t, 4>;

// Random123's known-answer tests for philox4x32-10 (kat_vectors). Words: counter
// (c0, c1, c2, c3) = (lo32(counter_lo), hi32(counter_lo), lo32(counter_hi), hi32(counter_hi)),
// key (k0, k1) = (lo32(key), hi32(key)).
TEST(Philox, KnownAnswerZero) {
  EXPECT_EQ(philox4x32(0, 0, 0), (Block{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
}

TEST(Philox, KnownAnswerAllOnes) {
  const uint64_t ones = ~uint64_t{0};
  EXPECT_EQ(philox4x32(ones, ones, ones),
            (Block{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
}

TEST(Philox, KnownAnswerPiChecksWordOrder) {
  // Random123: ctr {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, key {0xa4093822, 0x299f31d0}
  // -> {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}. All words differ, so this pins the
  // mapping of the 64-bit arguments onto Philox's 32-bit words.
  EXPECT_EQ(philox4x32(0x299f31d0a4093822ull, 0x0370734413198a2eull, 0x85a308d3243f6a88ull),
            (Block{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
}

// Pinned outputs: these bits are part of gauntlet's replay format. If this test fails the
// generator changed and every replay file written before is invalid.
TEST(RngPinned, Uniform01Seed5EEDStream0) {
  const uint64_t expected[8] = {
      0x3fb9ecb0643075b8ull,  // 0.1012678379633688
      0x3fcff36bfd12399cull,  // 0.24961614472381377
      0x3fac814fddfd15f0ull,  // 0.05567407212087605
      0x3fe24a3dec228132ull,  // 0.57156273002696012
      0x3fec0e3d3383d437ull,  // 0.87673816739573496
      0x3fe329b1e0278b27ull,  // 0.59883970050973268
      0x3fe9395300e0942full,  // 0.788247586930657
      0x3fe9596ff8632359ull,  // 0.792167649394382
  };
  for (uint64_t i = 0; i < 8; ++i) {
    SCOPED_TRACE(i);
    const double a = uniform01(0x5EED, 0, i);
    const double b = uniform01(0x5EED, 0, i);
    EXPECT_EQ(bits_of(a), expected[i]);
    EXPECT_EQ(bits_of(a), bits_of(b));
  }
}

TEST(RngPinned, NormalSeed5EEDStream0) {
  const uint64_t expected[8] = {
      0x3fd4d4b5fe44fbe4ull,  // 0.32548284369471348
      0xbfe029886c5db9e1ull,  // -0.5050699345136388
      0x3ffb977e9cf2ca73ull,  // 1.7244859820172251
      0x3fcd6a24ee5d1846ull,  // 0.2298017658123987
      0xc00087f85714dbabull,  // -2.0663916400184994
      0x3ff4765121b4d124ull,  // 1.2788859669354418
      0x3fe6009400340cdaull,  // 0.68757057227812912
      0x3f97c393690184f3ull,  // 0.023207000049642223
  };
  for (uint64_t i = 0; i < 8; ++i) {
    SCOPED_TRACE(i);
    const double a = normal(0x5EED, 0, i);
    const double b = normal(0x5EED, 0, i);
    EXPECT_EQ(bits_of(a), expected[i]);
    EXPECT_EQ(bits_of(a), bits_of(b));
  }
}

TEST(RngPinned, DeriveSeed) {
  EXPECT_EQ(derive_seed(0x5EED, "abc123", "nan-parity", 7), 0xeeae294841f25bdeull);
  EXPECT_EQ(derive_seed(0x5EED, "abc123", "nan-parity", 7),
            derive_seed(0x5EED, "abc123", "nan-parity", 7));
}

TEST(DeriveSeed, EveryFieldMatters) {
  const uint64_t base = derive_seed(1, "k", "g", 0);
  EXPECT_NE(base, derive_seed(2, "k", "g", 0));
  EXPECT_NE(base, derive_seed(1, "k2", "g", 0));
  EXPECT_NE(base, derive_seed(1, "k", "g2", 0));
  EXPECT_NE(base, derive_seed(1, "k", "g", 1));
}

TEST(DeriveSeed, FieldsDoNotRunTogether) {
  EXPECT_NE(derive_seed(1, "ab", "c", 0), derive_seed(1, "a", "bc", 0));
  EXPECT_NE(derive_seed(1, "", "abc", 0), derive_seed(1, "abc", "", 0));
  EXPECT_NE(derive_seed(1, std::string("a\0", 2), "b", 0), derive_seed(1, "a", std::string("\0b", 2), 0));
}

TEST(Rng, StreamsSeedsAndIndicesDiffer) {
  EXPECT_NE(uniform01(1, 0, 0), uniform01(2, 0, 0));
  EXPECT_NE(uniform01(1, 0, 0), uniform01(1, 1, 0));
  EXPECT_NE(uniform01(1, 0, 0), uniform01(1, 0, 1));
  EXPECT_NE(normal(1, 0, 0), normal(1, 1, 0));
}

TEST(Rng, Uniform01Range) {
  double sum = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    const double u = uniform01(42, 3, i);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    // 53 random bits: u * 2^53 is an integer.
    ASSERT_EQ(std::ldexp(u, 53), std::floor(std::ldexp(u, 53)));
    sum += u;
  }
  EXPECT_NEAR(sum / n, 0.5, 0.005);
}

TEST(Rng, UniformPm1Range) {
  double sum = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    const double u = uniform_pm1(42, 4, i);
    ASSERT_GT(u, -1.0);
    ASSERT_LT(u, 1.0);
    sum += u;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.01);
}

TEST(Rng, NormalMoments) {
  const int n = 100000;
  double sum = 0, sum2 = 0, sum4 = 0;
  for (int i = 0; i < n; ++i) {
    const double z = normal(0x5EED, 7, i);
    ASSERT_TRUE(std::isfinite(z));
    sum += z;
    sum2 += z * z;
    sum4 += z * z * z * z;
  }
  const double mean = sum / n;
  const double var = sum2 / n - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.01);
  EXPECT_NEAR(var, 1.0, 0.01);
  EXPECT_NEAR(sum4 / n, 3.0, 0.1);  // kurtosis of N(0,1)
}

TEST(Rng, BelowRangeAndUniformity) {
  EXPECT_EQ(below(1, 2, 3, 1), 0u);
  EXPECT_EQ(below(1, 2, 3, 0), 0u);
  std::vector<int> counts(7, 0);
  const int n = 70000;
  for (int i = 0; i < n; ++i) {
    const uint64_t v = below(9, 1, i, 7);
    ASSERT_LT(v, 7u);
    ++counts[v];
  }
  for (int c : counts) EXPECT_NEAR(c, n / 7, 400);  // ~4.4 sigma
}

TEST(Rng, BelowLargeBounds) {
  // n = 3 * 2^62: 2^64 mod n = 2^62, so a plain `w % n` would give v < 2^62 half of the time;
  // the unbiased answer is a third. Also rejects a quarter of all draws.
  const uint64_t big = uint64_t{3} << 62;
  int low = 0;
  for (int i = 0; i < 10000; ++i) {
    const uint64_t v = below(5, 0, i, big);
    ASSERT_LT(v, big);
    low += v < (uint64_t{1} << 62);
  }
  EXPECT_NEAR(low, 3333, 200);  // sd ~47; biased would be ~5000
  const uint64_t just_above = (uint64_t{1} << 63) + 1;  // rejects almost half of all draws
  for (int i = 0; i < 1000; ++i) ASSERT_LT(below(5, 2, i, just_above), just_above);
  const uint64_t maxn = std::numeric_limits<uint64_t>::max();
  for (int i = 0; i < 1000; ++i) ASSERT_LT(below(5, 1, i, maxn), maxn);
  EXPECT_EQ(below(5, 1, 17, 1000), below(5, 1, 17, 1000));
}

TEST(PortableLog, SpecialValues) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(portable_log(1.0), 0.0);
  EXPECT_FALSE(std::signbit(portable_log(1.0)));
  EXPECT_EQ(portable_log(0.0), -inf);
  EXPECT_EQ(portable_log(-0.0), -inf);
  EXPECT_EQ(portable_log(inf), inf);
  EXPECT_TRUE(std::isnan(portable_log(-1.0)));
  EXPECT_TRUE(std::isnan(portable_log(-inf)));
  EXPECT_TRUE(std::isnan(portable_log(std::numeric_limits<double>::quiet_NaN())));
  EXPECT_EQ(portable_log(2.0), 0.6931471805599453);
  EXPECT_LE(ulps_between(portable_log(std::exp(1.0)), 1.0), 1u);
}

TEST(PortableLog, WithinTwoUlpOfStdLog) {
  uint64_t worst = 0;
  double worst_x = 0;
  auto check = [&](double x) {
    const double p = portable_log(x);
    const double s = std::log(x);
    ASSERT_EQ(std::signbit(p), std::signbit(s)) << x;
    const uint64_t d = ulps_between(p, s);
    if (d > worst) {
      worst = d;
      worst_x = x;
    }
  };
  // Log-uniform over [1e-300, 1e300].
  const double lo = std::log(1e-300), hi = std::log(1e300);
  for (int i = 0; i < 200000; ++i) {
    double x = std::exp(lo + (hi - lo) * uniform01(11, 0, i));
    x = std::fmin(std::fmax(x, 1e-300), 1e300);
    check(x);
  }
  // Near 1, where ln(x) is small and cancellation would show.
  for (int i = 0; i < 100000; ++i) check(1.0 + 0.5 * uniform_pm1(11, 1, i));
  for (int i = 0; i < 100000; ++i) check(1.0 + 1e-7 * uniform_pm1(11, 2, i));
  // Random bit patterns of positive doubles (subnormals included), and the interval ends.
  for (int i = 0; i < 100000; ++i) {
    const auto b = philox4x32(12, 0, i);
    uint64_t bits = ((uint64_t{b[0]} << 32) | b[1]) & 0x7FFFFFFFFFFFFFFFull;
    double x;
    std::memcpy(&x, &bits, sizeof x);
    if (x == 0.0 || !std::isfinite(x)) continue;
    check(x);
  }
  for (double x : {1e-300, 1e300, std::numeric_limits<double>::denorm_min(),
                   std::numeric_limits<double>::min(), std::numeric_limits<double>::max(),
                   std::nextafter(1.0, 0.0), std::nextafter(1.0, 2.0), 0.70710678118654752440,
                   1.4142135623730951}) {
    check(x);
  }
  EXPECT_LE(worst, 2u) << "worst at x=" << worst_x;
}

}  // namespace
}  // namespace gauntlet::rng

// normal_fill is normal() drawn in bulk: bit for bit the same values, for runs that start anywhere
// (index carries into the counter's high word at 2^32), any length (not a multiple of the four
// lanes), and the rejected first attempts (about a fifth of the lanes) redone by normal().
TEST(NormalFill, EqualsNormalBitForBit) {
  struct Run {
    uint64_t seed, stream, first;
    int64_t count;
  };
  const Run runs[] = {{0x5EED, 0, 0, 100003},   {0xC0FFEE, 7, 123, 4097},  {1, 0x5300, (uint64_t(1) << 32) - 5, 23},
                      {~uint64_t(0), ~uint64_t(0), ~uint64_t(0) - 40, 41}, {42, 3, 999, 0},  {42, 3, 999, 3}};
  for (const Run& r : runs) {
    std::vector<double> bulk(size_t(r.count) + 1, -7.0);
    gauntlet::rng::normal_fill(r.seed, r.stream, r.first, r.count, bulk.data());
    int64_t mismatches = 0;
    for (int64_t j = 0; j < r.count; ++j) {
      const double one = gauntlet::rng::normal(r.seed, r.stream, r.first + uint64_t(j));
      if (std::memcmp(&one, &bulk[size_t(j)], sizeof one) != 0) ++mismatches;
    }
    EXPECT_EQ(mismatches, 0) << "seed " << r.seed << " first " << r.first;
    EXPECT_EQ(bulk[size_t(r.count)], -7.0) << "wrote past the end";
  }
}
