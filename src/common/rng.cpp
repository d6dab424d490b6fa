// Portable counter-based random numbers (see include/gauntlet/rng.h).
//
// Everything here is integer arithmetic or single IEEE-754 binary64 operations (+ - * / sqrt,
// frexp, ldexp), each correctly rounded, evaluated one at a time: this file must be compiled with
// -ffp-contract=off (no fused multiply-add) and with SSE2 / no excess precision, so a (seed,
// stream, index) gives the same bits on every compiler and platform.
//
// Layout of the generator (part of the replay format: changing it changes every generated tensor):
//   key     = stream_key(seed, stream)   a bijection of `seed` for each fixed `stream`
//   counter = (index, kind << 32 | attempt)  i.e. counter_lo = index, counter_hi = kind<<32|attempt
//   kind:   0 uniform01, 1 uniform_pm1, 2 normal, 3 below
// uniform01 and uniform_pm1 use attempt 0 only. normal's attempt a uses the four words of block
// (index, 2<<32 | a): words 0-1 give u, words 2-3 give v (both in (-1,1)); the first attempt with
// 0 < u*u + v*v < 1 yields u * sqrt(-2 ln(s) / s) (Marsaglia's polar method, one output kept).
// below's attempt a uses block (index, 3<<32 | a): words 0-1, then words 2-3, as 64-bit draws.
#include "gauntlet/rng.h"

#include <cfloat>
#include <cmath>
#include <limits>

#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD != 0
#error "gauntlet/rng.cpp needs FLT_EVAL_METHOD == 0 (no excess precision) for portable results"
#endif

namespace gauntlet::rng {

namespace {

constexpr uint32_t kPhiloxM0 = 0xD2511F53u;
constexpr uint32_t kPhiloxM1 = 0xCD9E8D57u;
constexpr uint32_t kPhiloxW0 = 0x9E3779B9u;
constexpr uint32_t kPhiloxW1 = 0xBB67AE85u;

constexpr uint64_t kKindUniform01 = 0;
constexpr uint64_t kKindUniformPm1 = 1;
constexpr uint64_t kKindNormal = 2;
constexpr uint64_t kKindBelow = 3;

// SplitMix64's finalizer (Steele, Lea, Flood 2014): a bijection on 64-bit words.
constexpr uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Philox key for (seed, stream). For a fixed stream it is a bijection of seed, so two seeds never
// share a key within one stream.
constexpr uint64_t stream_key(uint64_t seed, uint64_t stream) {
  return mix64(seed ^ mix64(stream + 0x9E3779B97F4A7C15ull));
}

std::array<uint32_t, 4> block(uint64_t seed, uint64_t stream, uint64_t index, uint64_t kind,
                              uint64_t attempt) {
  return philox4x32(stream_key(seed, stream), (kind << 32) | (attempt & 0xFFFFFFFFull), index);
}

constexpr uint64_t word64(uint32_t hi, uint32_t lo) { return (uint64_t{hi} << 32) | lo; }

constexpr double kTwoPowMinus53 = 1.0 / 9007199254740992.0;  // 2^-53, exact

// [0,1): the top 53 bits of w, times 2^-53 (exact).
double to_unit(uint64_t w) { return static_cast<double>(w >> 11) * kTwoPowMinus53; }

// (-1,1): the top 53 bits m of w map to (2m + 1 - 2^53) * 2^-53, the 2^53 odd multiples of 2^-53
// strictly inside (-1,1), symmetric about 0 (never 0, never +-1). Exact.
double to_pm1(uint64_t w) {
  const int64_t m = static_cast<int64_t>(w >> 11);
  const int64_t odd = 2 * m + 1 - (int64_t{1} << 53);
  return static_cast<double>(odd) * kTwoPowMinus53;
}

// Natural-log constants (fdlibm's e_log.c): ln2_hi has 32 trailing zero bits, so k * ln2_hi is
// exact for |k| < 2^20; ln2_lo = ln2 - ln2_hi.
constexpr double kLn2Hi = 6.93147180369123816490e-01;  // 0x3FE62E42FEE00000
constexpr double kLn2Lo = 1.90821492927058770002e-10;  // 0x3DEA39EF35793C76
constexpr double kSqrtHalf = 0.70710678118654752440;

}  // namespace

std::array<uint32_t, 4> philox4x32(uint64_t key, uint64_t counter_hi, uint64_t counter_lo) {
  uint32_t c0 = static_cast<uint32_t>(counter_lo);
  uint32_t c1 = static_cast<uint32_t>(counter_lo >> 32);
  uint32_t c2 = static_cast<uint32_t>(counter_hi);
  uint32_t c3 = static_cast<uint32_t>(counter_hi >> 32);
  uint32_t k0 = static_cast<uint32_t>(key);
  uint32_t k1 = static_cast<uint32_t>(key >> 32);
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += kPhiloxW0;
      k1 += kPhiloxW1;
    }
    const uint64_t p0 = uint64_t{kPhiloxM0} * c0;
    const uint64_t p1 = uint64_t{kPhiloxM1} * c2;
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
  }
  return {c0, c1, c2, c3};
}

uint64_t derive_seed(uint64_t master, const std::string& kernel_hash, const std::string& gate,
                     uint64_t case_index) {
  // FNV-1a-64 over a length-prefixed little-endian byte encoding:
  //   "gauntlet-seed-v1" | u64 master | u64 len | kernel_hash | u64 len | gate | u64 case_index
  // then SplitMix64's finalizer for avalanche. Fixed forever: replay files depend on it.
  uint64_t h = 0xCBF29CE484222325ull;
  auto byte = [&h](uint8_t b) {
    h ^= b;
    h *= 0x100000001B3ull;
  };
  auto u64 = [&byte](uint64_t v) {
    for (int i = 0; i < 8; ++i) byte(static_cast<uint8_t>(v >> (8 * i)));
  };
  auto str = [&byte, &u64](const std::string& s) {
    u64(s.size());
    for (char c : s) byte(static_cast<uint8_t>(c));
  };
  str("gauntlet-seed-v1");
  u64(master);
  str(kernel_hash);
  str(gate);
  u64(case_index);
  return mix64(h);
}

double uniform01(uint64_t seed, uint64_t stream, uint64_t index) {
  const auto x = block(seed, stream, index, kKindUniform01, 0);
  return to_unit(word64(x[0], x[1]));
}

double uniform_pm1(uint64_t seed, uint64_t stream, uint64_t index) {
  const auto x = block(seed, stream, index, kKindUniformPm1, 0);
  return to_pm1(word64(x[0], x[1]));
}

double normal(uint64_t seed, uint64_t stream, uint64_t index) {
  // Each attempt is accepted with probability pi/4; 2^32 attempts are never reached in practice
  // (probability (1 - pi/4)^(2^32)), but the loop is bounded by the counter layout anyway.
  for (uint64_t attempt = 0; attempt <= 0xFFFFFFFFull; ++attempt) {
    const auto x = block(seed, stream, index, kKindNormal, attempt);
    const double u = to_pm1(word64(x[0], x[1]));
    const double v = to_pm1(word64(x[2], x[3]));
    const double uu = u * u;
    const double vv = v * v;
    const double s = uu + vv;
    if (s >= 1.0 || s == 0.0) continue;
    const double ls = portable_log(s);
    const double m2 = -2.0 * ls;
    const double q = m2 / s;
    const double r = std::sqrt(q);  // IEEE sqrt is correctly rounded
    return u * r;
  }
  return 0.0;  // unreachable in practice
}

uint64_t below(uint64_t seed, uint64_t stream, uint64_t index, uint64_t n) {
  if (n <= 1) return 0;  // [0,1) has one value; n == 0 is meaningless and also gives 0
  // Accept a 64-bit draw w when w >= 2^64 mod n: the accepted range has a multiple of n values,
  // so w % n is exactly uniform.
  const uint64_t threshold = (0 - n) % n;  // == 2^64 mod n
  for (uint64_t attempt = 0; attempt <= 0xFFFFFFFFull; ++attempt) {
    const auto x = block(seed, stream, index, kKindBelow, attempt);
    const uint64_t w0 = word64(x[0], x[1]);
    if (w0 >= threshold) return w0 % n;
    const uint64_t w1 = word64(x[2], x[3]);
    if (w1 >= threshold) return w1 % n;
  }
  return 0;  // unreachable: each draw is rejected with probability < 1/2
}

double portable_log(double x) {
  // Special cases as std::log: NaN -> NaN, x < 0 -> NaN, +-0 -> -inf, +inf -> +inf.
  if (x != x) return x;
  if (x < 0.0) return std::numeric_limits<double>::quiet_NaN();
  if (x == 0.0) return -std::numeric_limits<double>::infinity();
  if (x == std::numeric_limits<double>::infinity()) return x;

  // x = m * 2^k with m in [sqrt(1/2), sqrt(2)) (frexp and the doubling are exact, subnormals too).
  int k = 0;
  double m = std::frexp(x, &k);  // m in [0.5, 1)
  if (m < kSqrtHalf) {
    m = m * 2.0;
    k -= 1;
  }
  // ln(m) = ln(1+f) = 2 atanh(s) with s = f / (2 + f), |s| <= 0.1716, z = s^2 <= 0.0295:
  //   2 atanh(s) = 2s + s*R,  R = 2z/3 + 2z^2/5 + ... + 2z^12/25 (truncation < 2^-60 relative)
  // and, as in fdlibm, ln(1+f) = f - (hfsq - s*(hfsq + R)) with hfsq = f^2/2, which keeps the
  // leading term f exact (f = m - 1 is exact by Sterbenz).
  const double f = m - 1.0;
  const double s = f / (2.0 + f);
  const double z = s * s;
  // Horner in z for 2/3, 2/5, ..., 2/25 (constants folded correctly rounded at compile time).
  constexpr double c[12] = {2.0 / 3.0,  2.0 / 5.0,  2.0 / 7.0,  2.0 / 9.0,
                            2.0 / 11.0, 2.0 / 13.0, 2.0 / 15.0, 2.0 / 17.0,
                            2.0 / 19.0, 2.0 / 21.0, 2.0 / 23.0, 2.0 / 25.0};
  double poly = c[11];
  for (int i = 10; i >= 0; --i) {
    const double t = poly * z;
    poly = c[i] + t;
  }
  const double R = z * poly;
  const double hfsq = 0.5 * f * f;
  const double dk = static_cast<double>(k);
  // ln(x) = k*ln2_hi - ((hfsq - (s*(hfsq+R) + k*ln2_lo)) - f)
  const double a = hfsq + R;
  const double b = s * a;
  const double c_lo = dk * kLn2Lo;
  const double d = b + c_lo;
  const double e = hfsq - d;
  const double g = e - f;
  const double h = dk * kLn2Hi;
  return h - g;
}

}  // namespace gauntlet::rng
