// Portable counter-based random numbers (see include/gauntlet/common/rng.h).
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
#include "gauntlet/common/rng.h"

#include <cfloat>
#include <cmath>
#include <cstring>
#include <algorithm>
#include <limits>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

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

namespace {

#if defined(__x86_64__)
// to_pm1(hi << 32 | lo) in four lanes: m = w >> 11 < 2^53 is exactly mh * 2^32 + ml (each
// converted exactly through the 2^52 bias), and (2m + 1 - 2^53) * 2^-53 = m * 2^-52 - (1 - 2^-53),
// one add whose exact result is representable.
__attribute__((target("avx2"))) inline __m256d to_pm1_4(__m256i hi, __m256i lo) {
  const __m256i bias_bits = _mm256_set1_epi64x(0x4330000000000000ll);
  const __m256d bias = _mm256_set1_pd(4503599627370496.0);  // 2^52
  const __m256i mh = _mm256_srli_epi64(hi, 11);             // m's top 21 bits
  const __m256i ml = _mm256_or_si256(_mm256_slli_epi64(_mm256_and_si256(hi, _mm256_set1_epi64x(0x7FF)), 21),
                                     _mm256_srli_epi64(lo, 11));  // m's low 32 bits
  const __m256d dh = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(mh, bias_bits)), bias);
  const __m256d dl = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(ml, bias_bits)), bias);
  const __m256d m = _mm256_add_pd(_mm256_mul_pd(dh, _mm256_set1_pd(4294967296.0)), dl);
  return _mm256_add_pd(_mm256_mul_pd(m, _mm256_set1_pd(2.0 * kTwoPowMinus53)), _mm256_set1_pd(-(1.0 - kTwoPowMinus53)));
}

// Four lanes of one attempt of normal() (each lane its own index and attempt), every operation the same IEEE operation in the same
// order (AVX2 only, no FMA: the target enables no fused multiply-add). Lanes whose first attempt
// is rejected (probability 1 - pi/4) are set in the returned bit mask, to be tried again.
__attribute__((target("avx2"), always_inline)) inline int normal_attempt4(uint64_t key, const uint64_t* index,
                                                                       const uint32_t* attempt, double* out) {
  const __m256i lo32 = _mm256_set1_epi64x(0xFFFFFFFFll);
  __m256i c0 = _mm256_setr_epi64x(int64_t(uint32_t(index[0])), int64_t(uint32_t(index[1])),
                                  int64_t(uint32_t(index[2])), int64_t(uint32_t(index[3])));
  __m256i c1 = _mm256_setr_epi64x(int64_t(index[0] >> 32), int64_t(index[1] >> 32), int64_t(index[2] >> 32),
                                  int64_t(index[3] >> 32));
  __m256i c2 = _mm256_setr_epi64x(attempt[0], attempt[1], attempt[2], attempt[3]);
  __m256i c3 = _mm256_set1_epi64x(int64_t(kKindNormal));  // kind
  uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  const __m256i m0 = _mm256_set1_epi64x(kPhiloxM0), m1 = _mm256_set1_epi64x(kPhiloxM1);
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += kPhiloxW0;
      k1 += kPhiloxW1;
    }
    const __m256i p0 = _mm256_mul_epu32(m0, c0), p1 = _mm256_mul_epu32(m1, c2);
    const __m256i hi0 = _mm256_srli_epi64(p0, 32), lo0 = _mm256_and_si256(p0, lo32);
    const __m256i hi1 = _mm256_srli_epi64(p1, 32), lo1 = _mm256_and_si256(p1, lo32);
    c0 = _mm256_xor_si256(_mm256_xor_si256(hi1, c1), _mm256_set1_epi64x(k0));
    c1 = lo1;
    c2 = _mm256_xor_si256(_mm256_xor_si256(hi0, c3), _mm256_set1_epi64x(k1));
    c3 = lo0;
  }
  const __m256d u = to_pm1_4(c0, c1), v = to_pm1_4(c2, c3);
  const __m256d s_raw = _mm256_add_pd(_mm256_mul_pd(u, u), _mm256_mul_pd(v, v));
  const __m256d one = _mm256_set1_pd(1.0);
  const __m256d bad = _mm256_or_pd(_mm256_cmp_pd(s_raw, one, _CMP_GE_OQ),
                                   _mm256_cmp_pd(s_raw, _mm256_setzero_pd(), _CMP_EQ_OQ));
  const __m256d s = _mm256_blendv_pd(s_raw, _mm256_set1_pd(0.5), bad);  // any valid input
  // portable_log(s) for s a positive normal number below 1 (s >= 2^-106 here): frexp by bits.
  const __m256i bits = _mm256_castpd_si256(s);
  __m256i k = _mm256_sub_epi64(_mm256_srli_epi64(bits, 52), _mm256_set1_epi64x(1022));
  __m256d mm = _mm256_castsi256_pd(_mm256_or_si256(_mm256_and_si256(bits, _mm256_set1_epi64x(0x000FFFFFFFFFFFFFll)),
                                                   _mm256_set1_epi64x(0x3FE0000000000000ll)));
  const __m256d below = _mm256_cmp_pd(mm, _mm256_set1_pd(kSqrtHalf), _CMP_LT_OQ);
  mm = _mm256_blendv_pd(mm, _mm256_mul_pd(mm, _mm256_set1_pd(2.0)), below);
  k = _mm256_add_epi64(k, _mm256_castpd_si256(below));  // below is all ones (-1) where true
  // k (a small integer) to double through the 2^52 + 2^51 bias.
  const __m256i kbias_bits = _mm256_set1_epi64x(0x4338000000000000ll);
  const __m256d dk = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_add_epi64(k, kbias_bits)),
                                   _mm256_set1_pd(6755399441055744.0));
  const __m256d f = _mm256_sub_pd(mm, one);
  const __m256d sl = _mm256_div_pd(f, _mm256_add_pd(_mm256_set1_pd(2.0), f));
  const __m256d z = _mm256_mul_pd(sl, sl);
  constexpr double c[12] = {2.0 / 3.0,  2.0 / 5.0,  2.0 / 7.0,  2.0 / 9.0,
                            2.0 / 11.0, 2.0 / 13.0, 2.0 / 15.0, 2.0 / 17.0,
                            2.0 / 19.0, 2.0 / 21.0, 2.0 / 23.0, 2.0 / 25.0};
  __m256d poly = _mm256_set1_pd(c[11]);
  for (int i = 10; i >= 0; --i) poly = _mm256_add_pd(_mm256_set1_pd(c[i]), _mm256_mul_pd(poly, z));
  const __m256d R = _mm256_mul_pd(z, poly);
  const __m256d hfsq = _mm256_mul_pd(_mm256_mul_pd(_mm256_set1_pd(0.5), f), f);
  const __m256d a = _mm256_add_pd(hfsq, R);
  const __m256d b = _mm256_mul_pd(sl, a);
  const __m256d d = _mm256_add_pd(b, _mm256_mul_pd(dk, _mm256_set1_pd(kLn2Lo)));
  const __m256d e = _mm256_sub_pd(hfsq, d);
  const __m256d g = _mm256_sub_pd(e, f);
  const __m256d ls = _mm256_sub_pd(_mm256_mul_pd(dk, _mm256_set1_pd(kLn2Hi)), g);
  const __m256d q = _mm256_div_pd(_mm256_mul_pd(_mm256_set1_pd(-2.0), ls), s);
  _mm256_storeu_pd(out, _mm256_mul_pd(u, _mm256_sqrt_pd(q)));
  return _mm256_movemask_pd(bad);
}

// Eight lanes at once: two independent four-lane chains, inlined side by side, so that one's
// latency (philox's multiplies, the log's Horner steps, the divisions) hides the other's.
// Returns the rejected lanes as a bit mask.
__attribute__((target("avx2"))) int normal_attempt8(uint64_t key, const uint64_t* index, const uint32_t* attempt,
                                                    double* out) {
  const int a = normal_attempt4(key, index, attempt, out);
  const int b = normal_attempt4(key, index + 4, attempt + 4, out + 4);
  return a | (b << 4);
}

bool have_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2");
  return yes;
}
#endif

}  // namespace

void normal_fill(uint64_t seed, uint64_t stream, uint64_t first, int64_t count, double* out) {
  int64_t j = 0;
#if defined(__x86_64__)
  if (have_avx2() && count >= 8) {
    // Every element's attempt 0 in lanes of eight; the rejected ones (about a fifth) are gathered
    // and tried again, attempt 1 for all of them, and so on until none is left. Each element ends
    // at its first accepted attempt, as in normal(). A short last group repeats its last element.
    const uint64_t key = stream_key(seed, stream);
    std::vector<uint64_t> pending, next;
    uint64_t index[8];
    uint32_t attempt[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (; j + 8 <= count; j += 8) {
      for (int l = 0; l < 8; ++l) index[l] = first + uint64_t(j + l);
      const int rejected = normal_attempt8(key, index, attempt, out + j);
      for (int l = 0; l < 8; ++l)
        if ((rejected >> l) & 1) pending.push_back(uint64_t(j + l));
    }
    double got[8];
    for (uint32_t a = 1; !pending.empty() && a != 0; ++a) {
      next.clear();
      for (size_t p = 0; p < pending.size(); p += 8) {
        const size_t lanes = std::min<size_t>(8, pending.size() - p);
        for (size_t l = 0; l < 8; ++l) {
          index[l] = first + pending[p + std::min(l, lanes - 1)];
          attempt[l] = a;
        }
        const int rejected = normal_attempt8(key, index, attempt, got);
        for (size_t l = 0; l < lanes; ++l) {
          if ((rejected >> l) & 1) next.push_back(pending[p + l]);
          else out[pending[p + l]] = got[l];
        }
      }
      pending.swap(next);
    }
    for (uint64_t p : pending) out[p] = 0.0;  // as normal() after 2^32 rejections: unreachable in practice
  }
#endif
  for (; j < count; ++j) out[j] = normal(seed, stream, first + uint64_t(j));
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
