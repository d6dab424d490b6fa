// Floating-point facts per dtype: correct rounding from double, ULP distance, unit roundoff, limits.
#pragma once
#include <cstdint>

#include "gauntlet/common/types.h"

namespace gauntlet::num {

struct DTypeLimits {
  double unit_roundoff;     // u = 2^-p (half an ULP at 1.0): fp32 2^-24, fp16 2^-11, bf16 2^-8, fp64 2^-53
  double max_finite;        // largest finite value
  double min_normal;        // smallest positive normal
  double min_subnormal;     // smallest positive subnormal
  int mantissa_bits;        // explicit fraction bits: fp32 23, fp16 10, bf16 7, fp64 52
};
DTypeLimits limits(DType floating_dtype);

// The double nearest to the correctly rounded (round-to-nearest-even) value of `x` in `dtype`,
// with IEEE overflow to +-inf and gradual underflow (subnormals kept). NaN stays NaN.
// Must be exact: no double rounding through float for float16/bfloat16.
double round_to(DType dtype, double x);

// Bit pattern of x (already representable in dtype, e.g. from round_to) in dtype's storage
// format, zero-extended; and back.
uint64_t to_bits(DType dtype, double representable);
double from_bits(DType dtype, uint64_t bits);

// Number of representable dtype values between a and b (both representable in dtype),
// 0 when equal; +0 and -0 are the same; a NaN operand gives UINT64_MAX; +-inf count as the
// next step past max_finite.
uint64_t ulp_distance(DType dtype, double a, double b);

// Size of one ULP of dtype at magnitude |x| (for x=0: min_subnormal).
double ulp_at(DType dtype, double x);

}  // namespace gauntlet::num
