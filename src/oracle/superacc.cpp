// The cpp_int superaccumulator: exact sums of doubles, rounded once to a floating dtype.
#include "gauntlet/oracle/superacc.h"

#include <cmath>
#include <limits>

#include "gauntlet/common/numerics.h"

namespace gauntlet {
namespace {

// Precision (bits, implicit one included) and the exponents of the smallest normal and the largest
// finite value, from the dtype's limits (exact powers of two, so ilogb is exact).
struct Format {
  int precision;
  int emin;
  int emax;
};

Format format_of(DType dtype) {
  const num::DTypeLimits lim = num::limits(dtype_is_floating(dtype) ? dtype : DType::Float64);
  return {lim.mantissa_bits + 1, std::ilogb(lim.min_normal), std::ilogb(lim.max_finite)};
}

}  // namespace

void SuperAccumulator::clear() { *this = SuperAccumulator(); }

void SuperAccumulator::align_to(int64_t lsb) {
  // Moving the last bit down never loses anything: the value is mant * 2^lsb either way.
  if (mant_ == 0) {
    lsb_ = lsb;
  } else if (lsb < lsb_) {
    mant_ <<= unsigned(lsb_ - lsb);
    lsb_ = lsb;
  }
}

void SuperAccumulator::add(double x) {
  if (std::isnan(x)) return void(nan_ = true);
  if (std::isinf(x)) return void((x > 0 ? pos_inf_ : neg_inf_) = true);
  if (x == 0) return;
  // x = f * 2^ex with f in [0.5, 1): f * 2^53 is an integer (subnormals included), then the
  // trailing zeros are dropped so lsb stays as high as the value allows.
  int ex = 0;
  const double f = std::frexp(std::fabs(x), &ex);
  uint64_t m = uint64_t(std::ldexp(f, 53));
  int64_t e = int64_t(ex) - 53;
  const int tz = __builtin_ctzll(m);
  m >>= tz;
  e += tz;
  if (mant_ == 0 || e < lsb_) align_to(e);
  Int term = m;
  if (e > lsb_) term <<= unsigned(e - lsb_);
  if (x < 0) mant_ -= term;
  else mant_ += term;
}

void SuperAccumulator::add_product(double a, double b) {
  const double p = a * b;
  add(p);
  // The product's rounding error, exactly (FMA), when the product was not exact: keeps the sum
  // exact for any two doubles whose product neither overflows nor underflows.
  if (std::isfinite(p) && p != 0) {
    const double err = std::fma(a, b, -p);
    if (err != 0) add(err);
  }
}

void SuperAccumulator::add(const SuperAccumulator& other) {
  nan_ |= other.nan_;
  pos_inf_ |= other.pos_inf_;
  neg_inf_ |= other.neg_inf_;
  if (other.mant_ == 0) return;
  if (mant_ == 0 || other.lsb_ < lsb_) align_to(other.lsb_);
  Int term = other.mant_;
  if (other.lsb_ > lsb_) term <<= unsigned(other.lsb_ - lsb_);
  mant_ += term;
}

double SuperAccumulator::round_fixed(DType dtype, bool negative, Int m, int64_t e, bool sticky) {
  const double sign = negative ? -1.0 : 1.0;
  if (m == 0) return 0.0;
  const Format f = format_of(dtype);
  // The value lies in [2^top, 2^(top+1)); the result's last bit sits P-1 bits below the top, or at
  // the subnormal grid's 2^(emin-P+1), whichever is higher.
  const int64_t top = e + int64_t(boost::multiprecision::msb(m));
  const int64_t q = std::max<int64_t>(top - (f.precision - 1), int64_t(f.emin) - (f.precision - 1));
  if (q <= e) {
    if (!sticky) {
      // Exact: at most P significant bits on the dtype's grid.
      if (top > f.emax) return sign * std::numeric_limits<double>::infinity();
      return sign * std::ldexp(m.convert_to<double>(), int(e));
    }
    // Nonzero bits below m's last: give them room below the rounding position.
    m <<= unsigned(e - q + 2);
    e = q - 2;
  }
  const unsigned shift = unsigned(q - e);
  const Int rem = m & ((Int(1) << shift) - 1);
  const Int half = Int(1) << (shift - 1);
  m >>= shift;
  // Round to nearest; a remainder of exactly half (and nothing below) goes to the even neighbour.
  if (rem > half || (rem == half && (sticky || (m & 1) != 0))) m += 1;
  if (m == 0) return sign * 0.0;
  // Past the largest finite value (the rounding may have carried into a new binade): IEEE overflow.
  if (q + int64_t(boost::multiprecision::msb(m)) > f.emax) return sign * std::numeric_limits<double>::infinity();
  return sign * std::ldexp(m.convert_to<double>(), int(q));
}

double SuperAccumulator::round_to(DType dtype) const {
  if (nan_ || (pos_inf_ && neg_inf_)) return std::numeric_limits<double>::quiet_NaN();
  if (pos_inf_) return std::numeric_limits<double>::infinity();
  if (neg_inf_) return -std::numeric_limits<double>::infinity();
  if (mant_ == 0) return 0.0;
  return round_fixed(dtype, mant_ < 0, boost::multiprecision::abs(mant_), lsb_, false);
}

double SuperAccumulator::round_quotient(DType dtype, uint64_t divisor) const {
  if (divisor == 0 || nan_ || (pos_inf_ && neg_inf_)) return std::numeric_limits<double>::quiet_NaN();
  if (pos_inf_) return std::numeric_limits<double>::infinity();
  if (neg_inf_) return -std::numeric_limits<double>::infinity();
  if (mant_ == 0) return 0.0;
  // Scale the dividend up so the integer quotient carries at least P + 3 bits: its last bit is then
  // below the rounding position, and a nonzero remainder only needs to be known as "sticky".
  const Format f = format_of(dtype);
  const unsigned extra = unsigned(f.precision + 3 + 64);
  const Int scaled = boost::multiprecision::abs(mant_) << extra;
  const Int quotient = scaled / divisor;
  const bool sticky = quotient * divisor != scaled;
  return round_fixed(dtype, mant_ < 0, quotient, lsb_ - int64_t(extra), sticky);
}

}  // namespace gauntlet
