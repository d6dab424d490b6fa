// Exact summation: a fixed-point superaccumulator on Boost.Multiprecision cpp_int, rounded once.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

#include <boost/multiprecision/cpp_int.hpp>

#include "gauntlet/oracle/oracle.h"
#include "gauntlet/common/types.h"

namespace gauntlet {

// Holds sum(terms) exactly as mant * 2^lsb (an integer times a power of two). Every finite double
// is an integer times 2^e with e >= -1074, so any sum of doubles is exact in this form; the
// product of two floats (24 + 24 bits, exponents within double's) is an exact double, so dot
// products of float32/float16/bfloat16 data are exact too. `lsb` only moves down, to the lowest
// bit seen, so sums of ordinary magnitudes stay a few limbs long (fast) while 1e30 + 1 - 1e30
// still comes out as exactly 1.
//
// Not cpp_bin_float: Boost 1.74 mis-rounds its additions (boostorg/multiprecision#251).
class SuperAccumulator {
 public:
  void add(double x);                      // exact; NaN and +-inf are counted, as IEEE sums them
  void add_product(double a, double b);    // a*b must be exact in double (products of two floats)
  void add(const SuperAccumulator& other);
  void clear();
  // The sum rounded once, round-to-nearest-even, to `dtype` (float64, float32, float16, bfloat16),
  // returned as the double holding that value: overflow gives +-inf (IEEE: past max_finite plus half
  // an ulp), gradual underflow keeps subnormals, an exact zero is +0. NaN when a NaN was added or
  // +inf and -inf both were.
  double round_to(DType dtype) const;
  // The exact quotient sum/divisor (divisor > 0), rounded once the same way (mean = sum/K).
  double round_quotient(DType dtype, uint64_t divisor) const;
  bool is_zero() const { return mant_ == 0 && !nan_ && !pos_inf_ && !neg_inf_; }

 private:
  using Int = boost::multiprecision::cpp_int;
  // Rounds sign * m * 2^e (m >= 0) once to dtype; `sticky` says nonzero bits lie below m's last.
  static double round_fixed(DType dtype, bool negative, Int m, int64_t e, bool sticky);
  void align_to(int64_t lsb);

  Int mant_ = 0;
  int64_t lsb_ = 0;       // exponent of mant_'s last bit (meaningful when mant_ != 0)
  bool nan_ = false, pos_inf_ = false, neg_inf_ = false;
};

// Exact oracles of the sum-like ops: the same outputs as the fp64 oracle (run_oracle), but each
// element is the exact sum (or dot product, or prefix sum, or sum/K) rounded once to `out_dtype`,
// returned as float64 values holding dtype-representable numbers. Ops: sum, mean, cumsum,
// segment_sum, group_by_sum, scatter_add, matmul, bmm, linear_relu. `supported` is false (and nothing computed) for any other
// op. The scales are the fp64 oracle's (magnitudes need no exactness). Never throws: failures come
// back in `error`.
OracleResult run_exact_oracle(const std::string& oracle_id, const std::vector<at::Tensor>& inputs,
                              const AttrMap& attrs, DType out_dtype, bool* supported);

// How the dot-product ops (matmul, bmm, linear_relu) get their exact results. Filtered: a float64
// GEMM with a rigorous error bound decides every element whose bound interval rounds to one value
// of out_dtype; only the rest (near a rounding boundary, a zero, or inputs that are not finite
// float32 values) are superaccumulated term by term. Same results as SuperaccumulateAll, at the
// cost of about two float64 GEMMs instead of K cpp_int additions per element.
enum class ExactPath { Filtered, SuperaccumulateAll };
struct ExactOracleStats {
  int64_t outputs = 0;           // elements of the dot-product ops' outputs
  int64_t superaccumulated = 0;  // of them, summed term by term
  bool filtered = false;         // the float64 filter ran (finite float32-representable inputs)
};
OracleResult run_exact_oracle(const std::string& oracle_id, const std::vector<at::Tensor>& inputs,
                              const AttrMap& attrs, DType out_dtype, bool* supported, ExactPath path,
                              ExactOracleStats* stats);
bool has_exact_oracle(const std::string& oracle_id);

}  // namespace gauntlet
