// Tests for src/common/numerics.cpp: exact rounding to float16/bfloat16, bit patterns, ULPs.
#include "gauntlet/common/numerics.h"

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "gauntlet/common/rng.h"

namespace gauntlet::num {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

uint64_t dbits(double x) {
  uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

// Same value and same sign of zero (NaN equals NaN).
bool same(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return dbits(a) == dbits(b);
}

// Independent decoders: c10's own bit-level conversions.
double c10_half_value(uint16_t bits) {
  return static_cast<double>(static_cast<float>(c10::Half(bits, c10::Half::from_bits())));
}
double c10_bf16_value(uint16_t bits) {
  return static_cast<double>(static_cast<float>(c10::BFloat16(bits, c10::BFloat16::from_bits())));
}

// Independent reference rounding of a finite double to a 16-bit format: binary search over the
// monotone positive bit patterns (decoded by c10) for the neighbours lo <= |x| < hi, then compare
// |x| with their midpoint (exact in double), ties to the even pattern. The pattern just past the
// largest finite one is inf, which stands for 2^(emax+1) in the comparison (IEEE overflow rule).
double reference_round(double x, double (*decode)(uint16_t), uint16_t inf_bits, double beyond) {
  const double a = std::fabs(x);
  auto value = [&](uint32_t b) { return b == inf_bits ? beyond : decode(static_cast<uint16_t>(b)); };
  if (a >= beyond) return std::copysign(kInf, x);
  uint32_t lo = 0, hi = inf_bits;  // value(lo) <= a < value(hi)
  while (hi - lo > 1) {
    const uint32_t mid = (lo + hi) / 2;
    (value(mid) <= a ? lo : hi) = mid;
  }
  const double vlo = value(lo), vhi = value(hi);
  const double midpoint = (vlo + vhi) / 2;  // exact: few significant bits
  uint32_t pick;
  if (a < midpoint) pick = lo;
  else if (a > midpoint) pick = hi;
  else pick = (lo % 2 == 0) ? lo : hi;
  const double r = pick == inf_bits ? kInf : decode(static_cast<uint16_t>(pick));
  return std::copysign(r, x);
}

double ref_half(double x) { return reference_round(x, c10_half_value, 0x7C00, 65536.0); }
double ref_bf16(double x) {
  return reference_round(x, c10_bf16_value, 0x7F80, std::ldexp(1.0, 128));
}

// A random double with exponent in [emin, emax], 52 random fraction bits and a random sign.
double random_double(uint64_t seed, uint64_t i, int emin, int emax) {
  const auto b = rng::philox4x32(seed, 1, i);
  const uint64_t frac = ((uint64_t{b[0]} << 32) | b[1]) & 0x000FFFFFFFFFFFFFull;
  const int e = emin + static_cast<int>(rng::below(seed, 2, i, emax - emin + 1));
  const double m = 1.0 + std::ldexp(static_cast<double>(frac), -52);
  const double v = std::ldexp(m, e);
  return (b[2] & 1) ? -v : v;
}

TEST(Numerics, Limits) {
  const DTypeLimits h = limits(DType::Float16);
  EXPECT_EQ(h.unit_roundoff, std::ldexp(1.0, -11));
  EXPECT_EQ(h.max_finite, 65504.0);
  EXPECT_EQ(h.min_normal, std::ldexp(1.0, -14));
  EXPECT_EQ(h.min_subnormal, std::ldexp(1.0, -24));
  EXPECT_EQ(h.mantissa_bits, 10);
  const DTypeLimits b = limits(DType::BFloat16);
  EXPECT_EQ(b.unit_roundoff, std::ldexp(1.0, -8));
  EXPECT_EQ(b.max_finite, c10_bf16_value(0x7F7F));
  EXPECT_EQ(b.min_normal, std::ldexp(1.0, -126));
  EXPECT_EQ(b.min_subnormal, std::ldexp(1.0, -133));
  EXPECT_EQ(b.mantissa_bits, 7);
  const DTypeLimits f = limits(DType::Float32);
  EXPECT_EQ(f.unit_roundoff, std::ldexp(1.0, -24));
  EXPECT_EQ(f.max_finite, static_cast<double>(FLT_MAX));
  EXPECT_EQ(f.min_normal, static_cast<double>(FLT_MIN));
  EXPECT_EQ(f.min_subnormal, static_cast<double>(std::numeric_limits<float>::denorm_min()));
  EXPECT_EQ(f.mantissa_bits, 23);
  const DTypeLimits d = limits(DType::Float64);
  EXPECT_EQ(d.unit_roundoff, std::ldexp(1.0, -53));
  EXPECT_EQ(d.max_finite, DBL_MAX);
  EXPECT_EQ(d.min_normal, DBL_MIN);
  EXPECT_EQ(d.min_subnormal, std::numeric_limits<double>::denorm_min());
  EXPECT_EQ(d.mantissa_bits, 52);
  EXPECT_THROW(limits(DType::Int32), std::invalid_argument);
}

TEST(Numerics, NonFloatingDTypesThrow) {
  EXPECT_THROW(round_to(DType::Int64, 1.0), std::invalid_argument);
  EXPECT_THROW(to_bits(DType::Bool, 1.0), std::invalid_argument);
  EXPECT_THROW(from_bits(DType::UInt8, 1), std::invalid_argument);
  EXPECT_THROW(ulp_distance(DType::Int8, 1.0, 2.0), std::invalid_argument);
  EXPECT_THROW(ulp_at(DType::Int32, 1.0), std::invalid_argument);
}

// Every float16 / bfloat16 bit pattern: decodes like c10, is a fixed point of round_to, and
// to_bits gives the pattern back (NaNs: stay NaN).
void check_all_patterns(DType dt, double (*decode)(uint16_t)) {
  int failures = 0;
  for (uint32_t b = 0; b <= 0xFFFF && failures < 10; ++b) {
    const double v = from_bits(dt, b);
    const double c10v = decode(static_cast<uint16_t>(b));
    if (!same(v, c10v)) {
      ADD_FAILURE() << std::hex << "bits 0x" << b << ": from_bits " << v << " c10 " << c10v;
      ++failures;
      continue;
    }
    if (!same(round_to(dt, v), v)) {
      ADD_FAILURE() << std::hex << "bits 0x" << b << ": round_to not a fixed point";
      ++failures;
    }
    if (std::isnan(v)) {
      if (!std::isnan(from_bits(dt, to_bits(dt, v)))) {
        ADD_FAILURE() << std::hex << "bits 0x" << b << ": NaN lost";
        ++failures;
      }
    } else if (to_bits(dt, v) != b) {
      ADD_FAILURE() << std::hex << "bits 0x" << b << ": to_bits gives 0x" << to_bits(dt, v);
      ++failures;
    }
  }
}

TEST(Numerics, EveryFloat16Pattern) { check_all_patterns(DType::Float16, c10_half_value); }
TEST(Numerics, EveryBFloat16Pattern) { check_all_patterns(DType::BFloat16, c10_bf16_value); }

TEST(Numerics, Float16MidpointCases) {
  const auto r = [](double x) { return round_to(DType::Float16, x); };
  const double sub = std::ldexp(1.0, -24);
  EXPECT_EQ(r(1.0 + std::ldexp(1.0, -11)), 1.0);  // tie -> even (1.0)
  EXPECT_EQ(r(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)), 1.0 + std::ldexp(1.0, -10));
  EXPECT_EQ(r(1.0 + 3 * std::ldexp(1.0, -11)), 1.0 + std::ldexp(1.0, -9));  // tie -> even (up)
  EXPECT_EQ(r(1.0 + std::ldexp(1.0, -11) - std::ldexp(1.0, -40)), 1.0);
  EXPECT_EQ(r(65519.99), 65504.0);
  EXPECT_EQ(r(65520.0), kInf);  // max_finite + half ulp: tie, and the even neighbour is 2^16
  EXPECT_EQ(r(-65520.0), -kInf);
  EXPECT_EQ(r(1e300), kInf);
  EXPECT_EQ(r(sub), sub);
  EXPECT_EQ(r(std::ldexp(1.0, -25)), 0.0);  // tie between 0 and min_subnormal -> 0 (even)
  EXPECT_FALSE(std::signbit(r(std::ldexp(1.0, -25))));
  EXPECT_TRUE(std::signbit(r(-std::ldexp(1.0, -25))));  // -> -0
  EXPECT_EQ(r(std::ldexp(1.0, -25) + std::ldexp(1.0, -70)), sub);
  EXPECT_EQ(r(3 * std::ldexp(1.0, -25)), 2 * sub);  // 1.5 subnormals: tie -> 2 (even)
  EXPECT_EQ(r(5 * std::ldexp(1.0, -25)), 2 * sub);  // 2.5 subnormals: tie -> 2 (even)
  EXPECT_EQ(r(std::ldexp(1.0, -14) - std::ldexp(1.0, -26)), std::ldexp(1.0, -14));  // up to normal
  EXPECT_EQ(r(std::numeric_limits<double>::denorm_min()), 0.0);
  EXPECT_EQ(r(1e-300), 0.0);
  EXPECT_EQ(r(0.1), c10_half_value(0x2E66));
  EXPECT_TRUE(std::signbit(r(-0.0)));
  EXPECT_EQ(r(kInf), kInf);
  EXPECT_EQ(r(-kInf), -kInf);
  EXPECT_TRUE(std::isnan(r(std::numeric_limits<double>::quiet_NaN())));
}

TEST(Numerics, Float16NoDoubleRounding) {
  // 1 + 2^-11 + 2^-30: nearest float is 1 + 2^-11 (a half tie), which would round to 1.0; the
  // exact value is above the tie and must round up.
  const double x = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -30);
  EXPECT_EQ(static_cast<double>(static_cast<float>(static_cast<float>(x))), 1.0 + std::ldexp(1.0, -11));
  EXPECT_EQ(round_to(DType::Float16, x), 1.0 + std::ldexp(1.0, -10));
  const double y = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30);
  EXPECT_EQ(round_to(DType::BFloat16, y), 1.0 + std::ldexp(1.0, -7));
}

TEST(Numerics, BFloat16MidpointCases) {
  const auto r = [](double x) { return round_to(DType::BFloat16, x); };
  const double maxf = limits(DType::BFloat16).max_finite;
  EXPECT_EQ(r(1.0 + std::ldexp(1.0, -8)), 1.0);
  EXPECT_EQ(r(1.0 + 3 * std::ldexp(1.0, -8)), 1.0 + std::ldexp(1.0, -6));
  EXPECT_EQ(r(maxf + std::ldexp(1.0, 127 - 8)), kInf);  // max + half ulp -> inf
  EXPECT_EQ(r(maxf + std::ldexp(1.0, 127 - 8) - std::ldexp(1.0, 90)), maxf);
  EXPECT_EQ(r(std::ldexp(1.0, -134)), 0.0);  // half of min_subnormal: tie -> 0
  EXPECT_EQ(r(std::ldexp(1.0, -134) * 1.5), std::ldexp(1.0, -133));
  EXPECT_EQ(r(1e39), kInf);
}

TEST(Numerics, Float16MatchesC10OnFloats) {
  // c10::Half(float) is correctly rounded from float; compare on doubles exactly representable
  // as float (no double rounding possible there).
  for (uint64_t i = 0; i < 200000; ++i) {
    const float f = static_cast<float>(random_double(21, i, -27, 17));
    const double x = static_cast<double>(f);
    ASSERT_TRUE(same(round_to(DType::Float16, x), static_cast<double>(static_cast<float>(c10::Half(f)))))
        << x;
  }
}

TEST(Numerics, BFloat16MatchesC10OnFloats) {
  for (uint64_t i = 0; i < 200000; ++i) {
    const float f = static_cast<float>(random_double(22, i, -136, 127));
    const double x = static_cast<double>(f);
    ASSERT_TRUE(
        same(round_to(DType::BFloat16, x), static_cast<double>(static_cast<float>(c10::BFloat16(f)))))
        << x;
  }
}

TEST(Numerics, Float16MatchesReferenceOnDoubles) {
  for (uint64_t i = 0; i < 100000; ++i) {
    const double x = random_double(31, i, -27, 17);
    ASSERT_TRUE(same(round_to(DType::Float16, x), ref_half(x))) << std::hexfloat << x;
  }
  // Exact midpoints between neighbouring float16 values, and a hair either side.
  for (uint64_t i = 0; i < 20000; ++i) {
    const auto b = static_cast<uint16_t>(rng::below(32, 0, i, 0x7BFF));  // b and b+1 finite
    const double mid = (c10_half_value(b) + c10_half_value(b + 1)) / 2;
    for (double x : {mid, std::nextafter(mid, 0.0), std::nextafter(mid, kInf)}) {
      ASSERT_TRUE(same(round_to(DType::Float16, x), ref_half(x))) << std::hexfloat << x;
      ASSERT_TRUE(same(round_to(DType::Float16, -x), ref_half(-x))) << std::hexfloat << -x;
    }
  }
}

TEST(Numerics, BFloat16MatchesReferenceOnDoubles) {
  for (uint64_t i = 0; i < 100000; ++i) {
    const double x = random_double(41, i, -136, 128);
    ASSERT_TRUE(same(round_to(DType::BFloat16, x), ref_bf16(x))) << std::hexfloat << x;
  }
  for (uint64_t i = 0; i < 20000; ++i) {
    const auto b = static_cast<uint16_t>(rng::below(42, 0, i, 0x7F7F));
    const double mid = (c10_bf16_value(b) + c10_bf16_value(b + 1)) / 2;
    for (double x : {mid, std::nextafter(mid, 0.0), std::nextafter(mid, kInf)}) {
      ASSERT_TRUE(same(round_to(DType::BFloat16, x), ref_bf16(x))) << std::hexfloat << x;
    }
  }
}

TEST(Numerics, Float32AndFloat64) {
  EXPECT_EQ(round_to(DType::Float32, 0.1), static_cast<double>(0.1f));
  EXPECT_EQ(round_to(DType::Float32, 1e39), kInf);
  EXPECT_EQ(round_to(DType::Float64, 0.1), 0.1);
  EXPECT_EQ(to_bits(DType::Float32, 1.0), 0x3F800000u);
  EXPECT_EQ(from_bits(DType::Float32, 0x3F800000u), 1.0);
  EXPECT_EQ(to_bits(DType::Float64, 1.0), 0x3FF0000000000000ull);
  EXPECT_EQ(from_bits(DType::Float64, 0x3FF0000000000000ull), 1.0);
  EXPECT_EQ(to_bits(DType::Float64, -0.0), 0x8000000000000000ull);
  EXPECT_EQ(from_bits(DType::Float32, 1), static_cast<double>(std::numeric_limits<float>::denorm_min()));
}

TEST(Numerics, SpecificBits) {
  EXPECT_EQ(to_bits(DType::Float16, 1.0), 0x3C00u);
  EXPECT_EQ(to_bits(DType::Float16, -2.0), 0xC000u);
  EXPECT_EQ(to_bits(DType::Float16, 65504.0), 0x7BFFu);
  EXPECT_EQ(to_bits(DType::Float16, kInf), 0x7C00u);
  EXPECT_EQ(to_bits(DType::Float16, -kInf), 0xFC00u);
  EXPECT_EQ(to_bits(DType::Float16, std::ldexp(1.0, -24)), 0x0001u);
  EXPECT_EQ(to_bits(DType::Float16, -0.0), 0x8000u);
  EXPECT_EQ(to_bits(DType::BFloat16, 1.0), 0x3F80u);
  EXPECT_EQ(to_bits(DType::BFloat16, std::ldexp(1.0, -133)), 0x0001u);
  EXPECT_EQ(to_bits(DType::BFloat16, kInf), 0x7F80u);
  EXPECT_TRUE(std::isnan(from_bits(DType::Float16, 0x7E00)));
  EXPECT_TRUE(std::isnan(from_bits(DType::BFloat16, 0xFFC1)));
}

TEST(Numerics, UlpDistance) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const uint64_t kMax = std::numeric_limits<uint64_t>::max();
  // float64
  EXPECT_EQ(ulp_distance(DType::Float64, 1.0, std::nextafter(1.0, 2.0)), 1u);
  EXPECT_EQ(ulp_distance(DType::Float64, 1.0, 1.0), 0u);
  EXPECT_EQ(ulp_distance(DType::Float64, -0.0, 0.0), 0u);
  const double dsub = std::numeric_limits<double>::denorm_min();
  EXPECT_EQ(ulp_distance(DType::Float64, -dsub, dsub), 2u);
  EXPECT_EQ(ulp_distance(DType::Float64, nan, 1.0), kMax);
  EXPECT_EQ(ulp_distance(DType::Float64, 1.0, nan), kMax);
  EXPECT_EQ(ulp_distance(DType::Float64, kInf, DBL_MAX), 1u);
  EXPECT_EQ(ulp_distance(DType::Float64, -kInf, kInf), 2 * (0x7FF0000000000000ull));
  // float32
  EXPECT_EQ(ulp_distance(DType::Float32, 1.0, static_cast<double>(std::nextafter(1.0f, 2.0f))), 1u);
  EXPECT_EQ(ulp_distance(DType::Float32, -0.0, 0.0), 0u);
  const double fsub = limits(DType::Float32).min_subnormal;
  EXPECT_EQ(ulp_distance(DType::Float32, -fsub, fsub), 2u);
  EXPECT_EQ(ulp_distance(DType::Float32, kInf, static_cast<double>(FLT_MAX)), 1u);
  EXPECT_EQ(ulp_distance(DType::Float32, nan, nan), kMax);
  // float16 / bfloat16
  for (DType dt : {DType::Float16, DType::BFloat16}) {
    SCOPED_TRACE(dtype_name(dt));
    const DTypeLimits L = limits(dt);
    EXPECT_EQ(ulp_distance(dt, 1.0, 1.0 + std::ldexp(1.0, -L.mantissa_bits)), 1u);
    EXPECT_EQ(ulp_distance(dt, 1.0 - std::ldexp(1.0, -L.mantissa_bits - 1), 1.0), 1u);
    EXPECT_EQ(ulp_distance(dt, -0.0, 0.0), 0u);
    EXPECT_EQ(ulp_distance(dt, -L.min_subnormal, L.min_subnormal), 2u);
    EXPECT_EQ(ulp_distance(dt, L.min_subnormal, 0.0), 1u);
    EXPECT_EQ(ulp_distance(dt, kInf, L.max_finite), 1u);
    EXPECT_EQ(ulp_distance(dt, -kInf, -L.max_finite), 1u);
    EXPECT_EQ(ulp_distance(dt, 2.0, 1.0), uint64_t{1} << L.mantissa_bits);
    EXPECT_EQ(ulp_distance(dt, -1.0, 1.0), ulp_distance(dt, 0.0, 1.0) * 2);
    EXPECT_EQ(ulp_distance(dt, nan, 0.0), kMax);
  }
  EXPECT_EQ(ulp_distance(DType::Float16, 65504.0, 65472.0), 1u);
}

TEST(Numerics, UlpAt) {
  EXPECT_EQ(ulp_at(DType::Float16, 1.0), std::ldexp(1.0, -10));
  EXPECT_EQ(ulp_at(DType::Float16, -1.5), std::ldexp(1.0, -10));
  EXPECT_EQ(ulp_at(DType::Float16, 2048.0), 2.0);
  EXPECT_EQ(ulp_at(DType::Float16, 65504.0), 32.0);
  EXPECT_EQ(ulp_at(DType::Float16, 0.0), std::ldexp(1.0, -24));
  EXPECT_EQ(ulp_at(DType::Float16, std::ldexp(1.0, -20)), std::ldexp(1.0, -24));  // subnormal
  EXPECT_EQ(ulp_at(DType::BFloat16, 2048.0), 16.0);
  EXPECT_EQ(ulp_at(DType::BFloat16, 0.0), std::ldexp(1.0, -133));
  EXPECT_EQ(ulp_at(DType::Float32, 1.0), std::ldexp(1.0, -23));
  EXPECT_EQ(ulp_at(DType::Float64, 1.0), std::ldexp(1.0, -52));
  EXPECT_EQ(ulp_at(DType::Float64, 0.0), std::numeric_limits<double>::denorm_min());
  EXPECT_EQ(ulp_at(DType::Float64, DBL_MIN), std::numeric_limits<double>::denorm_min());
  // Consistency with ulp_distance: one ulp_at step above a value is one ULP away.
  for (uint32_t b = 0; b < 0x7BFF; b += 7) {
    const double v = from_bits(DType::Float16, b);
    EXPECT_EQ(ulp_distance(DType::Float16, v, v + ulp_at(DType::Float16, v)), 1u) << v;
  }
  EXPECT_TRUE(std::isnan(ulp_at(DType::Float16, std::numeric_limits<double>::quiet_NaN())));
}

}  // namespace

// float8_e4m3fn (OCP FP8 E4M3, "fn": no infinity) by hand: the 256 patterns decoded from their
// fields, not from gauntlet's helper; every finite one is a fixed point of round_to and encodes back.
double e4m3_by_fields(uint32_t bits) {
  const int e = int((bits >> 3) & 0xF), f = int(bits & 0x7);
  if (e == 15 && f == 7) return std::numeric_limits<double>::quiet_NaN();
  const double mag = e == 0 ? f / 512.0 : (1.0 + f / 8.0) * std::ldexp(1.0, e - 7);
  return (bits & 0x80) ? -mag : mag;
}

TEST(Numerics, EveryFloat8E4M3Pattern) {
  int nans = 0;
  for (uint32_t b = 0; b <= 0xFF; ++b) {
    const double v = from_bits(DType::Float8E4M3, b);
    ASSERT_TRUE(same(v, e4m3_by_fields(b))) << std::hex << "bits 0x" << b << ": " << v;
    if (std::isnan(v)) {
      ++nans;
      EXPECT_EQ(to_bits(DType::Float8E4M3, v) & 0x7F, 0x7Fu);
      continue;
    }
    EXPECT_TRUE(same(round_to(DType::Float8E4M3, v), v)) << std::hex << "bits 0x" << b;
    EXPECT_EQ(to_bits(DType::Float8E4M3, v), b) << std::hex << "bits 0x" << b;
  }
  EXPECT_EQ(nans, 2) << "only S.1111.111 is NaN";
}

TEST(Numerics, Float8E4M3LimitsAndRounding) {
  const DTypeLimits l = limits(DType::Float8E4M3);
  EXPECT_EQ(l.max_finite, 448.0);
  EXPECT_EQ(l.min_normal, std::ldexp(1.0, -6));
  EXPECT_EQ(l.min_subnormal, std::ldexp(1.0, -9));
  EXPECT_EQ(l.unit_roundoff, std::ldexp(1.0, -4));
  EXPECT_EQ(l.mantissa_bits, 3);
  EXPECT_TRUE(dtype_is_floating(DType::Float8E4M3));
  EXPECT_EQ(dtype_size(DType::Float8E4M3), 1);
  EXPECT_EQ(dtype_from_name("float8_e4m3fn"), DType::Float8E4M3);
  // Round half to even: 1.0625 lies halfway between 1 and 1.125 -> 1; 1.1875 between 1.125 and 1.25 -> 1.25.
  EXPECT_EQ(round_to(DType::Float8E4M3, 1.0625), 1.0);
  EXPECT_EQ(round_to(DType::Float8E4M3, 1.1875), 1.25);
  // Gradual underflow: 3 * 2^-10 is halfway between 2^-9 and 2^-8 -> 2^-8 (even); below a quarter of 2^-9 -> 0.
  EXPECT_EQ(round_to(DType::Float8E4M3, 3 * std::ldexp(1.0, -10)), std::ldexp(1.0, -8));
  EXPECT_EQ(round_to(DType::Float8E4M3, std::ldexp(1.0, -11)), 0.0);
  // No infinity: 464 (halfway past 448) and beyond, and +-inf, become NaN, as torch converts them.
  EXPECT_EQ(round_to(DType::Float8E4M3, 460.0), 448.0);
  EXPECT_TRUE(std::isnan(round_to(DType::Float8E4M3, 470.0)));
  EXPECT_TRUE(std::isnan(round_to(DType::Float8E4M3, 1e6)));
  EXPECT_TRUE(std::isnan(round_to(DType::Float8E4M3, -std::numeric_limits<double>::infinity())));
  // Spacing: 2^-9 at the bottom, 32 in the top binade [256, 448].
  EXPECT_EQ(ulp_at(DType::Float8E4M3, 0.0), std::ldexp(1.0, -9));
  EXPECT_EQ(ulp_at(DType::Float8E4M3, 300.0), 32.0);
  EXPECT_EQ(ulp_distance(DType::Float8E4M3, 1.0, 1.25), 2u);
  EXPECT_EQ(ulp_distance(DType::Float8E4M3, -std::ldexp(1.0, -9), std::ldexp(1.0, -9)), 2u);
}

}  // namespace gauntlet::num
