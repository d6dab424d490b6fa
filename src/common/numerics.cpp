// Floating-point facts per dtype (see include/gauntlet/common/numerics.h).
//
// float16 and bfloat16 rounding works on the double's bits with integer arithmetic, so it is exact
// (no double rounding through float) and independent of the FPU's rounding mode and FTZ/DAZ
// flags. float32 uses the hardware double->float conversion (correctly rounded to nearest even,
// provided the thread runs in the default rounding mode without flush-to-zero).
#include "gauntlet/common/numerics.h"

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

namespace gauntlet::num {

namespace {

// A binary floating-point format with `mant` explicit fraction bits and exponent range
// [emin, emax] for normal numbers (bias = emax).
struct Format {
  int mant;
  int emin;
  int emax;
  int total_bits;
};

constexpr Format kF16{10, -14, 15, 16};
constexpr Format kBF16{7, -126, 127, 16};
constexpr Format kF32{23, -126, 127, 32};
constexpr Format kF64{52, -1022, 1023, 64};
// float8_e4m3fn: bias 7, and the all-ones exponent holds normal numbers too (up to 1.75 * 2^8 =
// 448); only S.1111.111 is NaN, and there is no infinity. As a Format its emax is 8 (the top
// binade's exponent), which round_small needs; its bits are not IEEE-like (the bias is 7, not
// emax), so e4m3_to_bits/e4m3_from_bits encode them themselves.
constexpr Format kE4M3{3, -6, 8, 8};
constexpr int kE4M3Bias = 7;
constexpr double kE4M3Max = 448.0;
constexpr uint64_t kE4M3NaN = 0x7F;

[[noreturn]] void not_floating(const char* what, DType d) {
  throw std::invalid_argument(std::string("gauntlet::num::") + what + ": dtype " +
                              dtype_name(d) + " is not a floating dtype");
}

const Format& format_of(DType d, const char* what) {
  switch (d) {
    case DType::Float16: return kF16;
    case DType::BFloat16: return kBF16;
    case DType::Float32: return kF32;
    case DType::Float64: return kF64;
    case DType::Float8E4M3: return kE4M3;
    default: not_floating(what, d);
  }
}

uint64_t double_bits(double x) {
  uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

double bits_double(uint64_t b) {
  double x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}

// Round-to-nearest-even of x into format `f` (f.mant < 52), exactly, on the bits of x.
double round_small(const Format& f, double x) {
  const uint64_t bits = double_bits(x);
  const uint64_t sign = bits & 0x8000000000000000ull;
  const int biased = static_cast<int>((bits >> 52) & 0x7FF);
  const uint64_t frac = bits & 0x000FFFFFFFFFFFFFull;
  if (biased == 0x7FF) return x;      // inf stays inf (with its sign), NaN stays NaN
  if (biased == 0) return bits_double(sign);  // +-0, and double subnormals (< 2^-1022, far below
                                              // half of any target's min_subnormal) -> +-0
  // |x| = M * 2^(E - 52), M in [2^52, 2^53).
  const int E = biased - 1023;
  if (E > f.emax) return sign ? -std::numeric_limits<double>::infinity()
                               : std::numeric_limits<double>::infinity();
  const uint64_t M = frac | (uint64_t{1} << 52);
  // Quantum (ULP) of the target at |x|: 2^q with q = max(E, emin) - mant (gradual underflow).
  const int q = (E > f.emin ? E : f.emin) - f.mant;
  const int shift = q - (E - 52);  // bits of M below the quantum; >= 52 - mant > 0
  uint64_t R;
  if (shift >= 64) {
    R = 0;  // |x| < 2^(q-11): below half a quantum
  } else {
    R = M >> shift;
    const uint64_t rem = M & ((uint64_t{1} << shift) - 1);
    const uint64_t half = uint64_t{1} << (shift - 1);
    if (rem > half || (rem == half && (R & 1))) ++R;
  }
  // R <= 2^(mant+1) and q is in [emin - mant, emax - mant], so R * 2^q is an exact (normal or
  // zero) double.
  double mag = std::ldexp(static_cast<double>(R), q);
  // IEEE overflow: the value rounded with an unbounded exponent exceeds max_finite -> inf.
  const double max_finite = std::ldexp(static_cast<double>((uint64_t{2} << f.mant) - 1),
                                       f.emax - f.mant);
  if (mag > max_finite) mag = std::numeric_limits<double>::infinity();
  return sign ? -mag : mag;
}

// Bits of a value representable in a small format (float16 / bfloat16).
uint64_t small_to_bits(const Format& f, double x) {
  const int bias = f.emax;
  const uint64_t exp_all_ones = (uint64_t{1} << (f.total_bits - 1 - f.mant)) - 1;
  const uint64_t sign = std::signbit(x) ? (uint64_t{1} << (f.total_bits - 1)) : 0;
  if (std::isnan(x)) {
    // Canonical quiet NaN: exponent all ones, top fraction bit set.
    return sign | (exp_all_ones << f.mant) | (uint64_t{1} << (f.mant - 1));
  }
  const double a = std::fabs(x);
  if (std::isinf(a)) return sign | (exp_all_ones << f.mant);
  if (a == 0.0) return sign;
  int e = 0;
  const double m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  const int E = e - 1;                 // a in [2^E, 2^(E+1))
  if (E < f.emin) {
    // Subnormal: a = frac * 2^(emin - mant).
    const auto frac = static_cast<uint64_t>(std::ldexp(a, f.mant - f.emin));
    return sign | frac;
  }
  const auto significand = static_cast<uint64_t>(std::ldexp(m, f.mant + 1));  // in [2^mant, 2^(mant+1))
  const uint64_t frac = significand - (uint64_t{1} << f.mant);
  return sign | (static_cast<uint64_t>(E + bias) << f.mant) | frac;
}

double small_from_bits(const Format& f, uint64_t bits) {
  const int bias = f.emax;
  const int exp_bits = f.total_bits - 1 - f.mant;
  const uint64_t exp_all_ones = (uint64_t{1} << exp_bits) - 1;
  const bool neg = (bits >> (f.total_bits - 1)) & 1;
  const uint64_t ex = (bits >> f.mant) & exp_all_ones;
  const uint64_t frac = bits & ((uint64_t{1} << f.mant) - 1);
  double mag;
  if (ex == exp_all_ones) {
    mag = frac ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else if (ex == 0) {
    mag = std::ldexp(static_cast<double>(frac), f.emin - f.mant);
  } else {
    mag = std::ldexp(static_cast<double>(frac | (uint64_t{1} << f.mant)),
                     static_cast<int>(ex) - bias - f.mant);
  }
  return neg ? -mag : mag;
}

// float8_e4m3fn has no infinity: what would overflow (past 448 after rounding, or +-inf) is NaN,
// as torch's float -> Float8_e4m3fn conversion makes it.
double e4m3_round(double x) {
  if (std::isnan(x) || std::isinf(x)) return std::numeric_limits<double>::quiet_NaN();
  const double r = round_small(kE4M3, x);  // IEEE-like: its max finite is 480, past that inf
  return std::fabs(r) > kE4M3Max ? std::numeric_limits<double>::quiet_NaN() : r;
}

uint64_t e4m3_to_bits(double representable) {
  const double x = e4m3_round(representable);
  const uint64_t sign = std::signbit(x) ? 0x80 : 0;
  if (std::isnan(x)) return sign | kE4M3NaN;
  const double a = std::fabs(x);
  if (a < std::ldexp(1.0, kE4M3.emin)) return sign | static_cast<uint64_t>(std::ldexp(a, kE4M3.mant - kE4M3.emin));
  int e = 0;
  const double m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  const auto significand = static_cast<uint64_t>(std::ldexp(m, kE4M3.mant + 1));  // in [8, 16)
  return sign | (static_cast<uint64_t>(e - 1 + kE4M3Bias) << kE4M3.mant) | (significand - 8);
}

double e4m3_from_bits(uint64_t bits) {
  const bool neg = (bits >> 7) & 1;
  const uint64_t ex = (bits >> 3) & 0xF, frac = bits & 0x7;
  if (ex == 0xF && frac == 0x7) return std::numeric_limits<double>::quiet_NaN();
  const double mag = ex == 0 ? std::ldexp(double(frac), kE4M3.emin - kE4M3.mant)
                             : std::ldexp(double(frac | 0x8), int(ex) - kE4M3Bias - kE4M3.mant);
  return neg ? -mag : mag;
}

}  // namespace

DTypeLimits limits(DType floating_dtype) {
  switch (floating_dtype) {
    case DType::Float32:
      return {std::ldexp(1.0, -24), static_cast<double>(FLT_MAX), std::ldexp(1.0, -126),
              std::ldexp(1.0, -149), 23};
    case DType::Float16:
      return {std::ldexp(1.0, -11), 65504.0, std::ldexp(1.0, -14), std::ldexp(1.0, -24), 10};
    case DType::BFloat16:
      return {std::ldexp(1.0, -8), std::ldexp(255.0, 120), std::ldexp(1.0, -126),
              std::ldexp(1.0, -133), 7};
    case DType::Float64:
      return {std::ldexp(1.0, -53), DBL_MAX, DBL_MIN, std::numeric_limits<double>::denorm_min(),
              52};
    case DType::Float8E4M3:
      return {std::ldexp(1.0, -4), kE4M3Max, std::ldexp(1.0, -6), std::ldexp(1.0, -9), 3};
    default:
      not_floating("limits", floating_dtype);
  }
}

double round_to(DType dtype, double x) {
  switch (dtype) {
    case DType::Float16: return round_small(kF16, x);
    case DType::BFloat16: return round_small(kBF16, x);
    case DType::Float32: return static_cast<double>(static_cast<float>(x));
    case DType::Float64: return x;
    case DType::Float8E4M3: return e4m3_round(x);
    default: not_floating("round_to", dtype);
  }
}

uint64_t to_bits(DType dtype, double representable) {
  switch (dtype) {
    case DType::Float16:
    case DType::BFloat16: {
      // Rounding first makes a value that is not representable map to its rounded bits.
      const Format& f = format_of(dtype, "to_bits");
      return small_to_bits(f, round_small(f, representable));
    }
    case DType::Float32: {
      const float v = static_cast<float>(representable);
      uint32_t b;
      std::memcpy(&b, &v, sizeof b);
      return b;
    }
    case DType::Float64: return double_bits(representable);
    case DType::Float8E4M3: return e4m3_to_bits(representable);
    default: not_floating("to_bits", dtype);
  }
}

double from_bits(DType dtype, uint64_t bits) {
  switch (dtype) {
    case DType::Float16: return small_from_bits(kF16, bits & 0xFFFFu);
    case DType::BFloat16: return small_from_bits(kBF16, bits & 0xFFFFu);
    case DType::Float32: {
      const auto b = static_cast<uint32_t>(bits);
      float v;
      std::memcpy(&v, &b, sizeof v);
      return static_cast<double>(v);
    }
    case DType::Float64: return bits_double(bits);
    case DType::Float8E4M3: return e4m3_from_bits(bits & 0xFFu);
    default: not_floating("from_bits", dtype);
  }
}

uint64_t ulp_distance(DType dtype, double a, double b) {
  const Format& f = format_of(dtype, "ulp_distance");
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<uint64_t>::max();
  // Monotone key: sign-magnitude bits mapped so that -m -> offset - m, +m -> offset + m
  // (so +0 and -0 share the key `offset`, and inf is one step past max_finite).
  const uint64_t sign_bit = uint64_t{1} << (f.total_bits - 1);
  const auto key = [&](double v) {
    const uint64_t bits = to_bits(dtype, v);
    const uint64_t mag = bits & (sign_bit - 1);
    return (bits & sign_bit) ? sign_bit - mag : sign_bit + mag;
  };
  const uint64_t ka = key(a);
  const uint64_t kb = key(b);
  return ka > kb ? ka - kb : kb - ka;
}

double ulp_at(DType dtype, double x) {
  const Format& f = format_of(dtype, "ulp_at");
  if (std::isnan(x)) return x;
  const double a = std::fabs(x);
  if (std::isinf(a)) return a;  // no finite spacing at infinity
  if (a == 0.0) return std::ldexp(1.0, f.emin - f.mant);
  int e = 0;
  std::frexp(a, &e);
  const int E = e - 1;  // a in [2^E, 2^(E+1)); beyond max_finite the formula just continues
  return std::ldexp(1.0, (E > f.emin ? E : f.emin) - f.mant);
}

}  // namespace gauntlet::num
