// Oracles of the quantized ops (SPEC "next ops"): quantize_per_tensor to int8, dequantize back, int8_matmul and fp8_matmul with scales.
#include <algorithm>
#include <cmath>
#include <limits>

#include "oracle_internal.h"

namespace gauntlet::oracle_impl {
namespace {

constexpr int64_t kInt8Min = -128, kInt8Max = 127;

// The int8 data of a quantized operand, as int64 (the values are small integers, so exact).
std::vector<int64_t> int8_values(const Inputs& in, size_t i, const char* name) {
  const at::Tensor t = in.at(i);
  if (t.scalar_type() != at::kChar) fail(std::string(name) + " must be int8, got " + std::string(at::toString(t.scalar_type())));
  const at::Tensor c = t.to(at::kLong).contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

// The level of x / sf for the exact quotient, rounded half to even: the sign of x - (n + 0.5) * sf
// is decided exactly in double ((n + 0.5) * sf holds at most 21 + 24 bits), so a boundary is a tie
// exactly when the quotient is. Quotients past 2^20 saturate whatever their rounding.
double exact_quotient_level(float x, float sf) {
  const double q = double(x) / double(sf);
  if (!(std::fabs(q) < 1048576.0)) return q;
  const double n = std::floor(q), boundary = (n + 0.5) * double(sf);
  if (double(x) > boundary) return n + 1;
  if (double(x) < boundary) return n;
  return std::fmod(n, 2.0) == 0 ? n : n + 1;
}

int64_t saturate(double level, int64_t zero_point) {
  const double shifted = level + double(zero_point);
  return shifted <= double(kInt8Min) ? kInt8Min : shifted >= double(kInt8Max) ? kInt8Max : int64_t(shifted);
}

}  // namespace

// torch.quantize_per_tensor(x, scale, zero_point, torch.qint8).int_repr(). The contract is torch's
// arithmetic (ATen's quantize_val and FBGEMM's Quantize agree on it): the float32 reciprocal of the
// float32 scale, one float32 product with x, rounded half to even (nearbyint in the default rounding
// mode), the zero point added, saturated to [-128, 127]. The float32 product decides values whose
// exact quotient x/scale lies within half a float32 ulp of a rounding boundary, so the oracle does
// exactly that arithmetic, in float32, and nothing else; +-inf saturate; NaN has no quantized value.
//
// The scales tensor is the quantize-rounding tolerance's (docs/tolerances.md): per element, the
// offset from the reference to the one other admissible result, 0 where there is none. A correct
// quantizer may round the float32 quotient x / scale, or the exact quotient, instead of torch's
// product x * (1 / scale); the three differ by at most one level, and only near a boundary.
OracleResult quantize_per_tensor(const Inputs& in, const AttrMap& attrs) {
  expect_count(in, 1);
  const at::Tensor x = in.at(0);
  if (x.scalar_type() != at::kFloat) fail("x must be float32, got " + std::string(at::toString(x.scalar_type())));
  const double scale = attr_double(attrs, "scale");
  const int64_t zero_point = attr_int(attrs, "zero_point");
  if (!(scale > 0) || !std::isfinite(scale)) fail("scale must be finite and positive, got " + std::to_string(scale));
  if (zero_point < kInt8Min || zero_point > kInt8Max) fail("zero_point must lie in [-128, 127], got " + std::to_string(zero_point));
  const float sf = static_cast<float>(scale);
  const float inv_scale = 1.0f / sf;
  if (!(sf > 0) || !std::isfinite(inv_scale)) fail("1/scale overflows float32 (scale " + std::to_string(scale) + ")");
  const at::Tensor c = x.contiguous();
  const float* p = c.data_ptr<float>();
  std::vector<int64_t> q(size_t(c.numel()));
  std::vector<double> other(q.size(), 0.0);
  for (size_t i = 0; i < q.size(); ++i) {
    if (std::isnan(p[i])) fail("x holds NaN at flat index " + std::to_string(i) + ": it has no quantized value");
    const float product = p[i] * inv_scale;  // float32, as torch computes it
    q[i] = saturate(std::nearbyint(double(product)), zero_point);  // exact: a float32 is exact in double
    const float quotient = p[i] / sf;        // float32 division
    const int64_t by_quotient = saturate(std::nearbyint(double(quotient)), zero_point);
    const int64_t by_exact = saturate(std::isinf(p[i]) ? double(p[i]) : exact_quotient_level(p[i], sf), zero_point);
    for (int64_t alt : {by_quotient, by_exact}) {
      if (alt == q[i]) continue;
      if (other[i] != 0 && double(alt - q[i]) != other[i])
        fail("three different quantized values at flat index " + std::to_string(i) + " (cannot happen)");
      other[i] = double(alt - q[i]);
    }
  }
  return make_result(at::tensor(at::ArrayRef<int64_t>(q), at::kLong).reshape(x.sizes()).clone(),
                     at::tensor(at::ArrayRef<double>(other), at::kDouble).reshape(x.sizes()).clone());
}

// torch.dequantize of a per-tensor qint8 tensor: (x.int() - zero_point) * float32(scale), rounded
// once to float32. torch keeps a quantized tensor's scale as a double but dequantizes with its
// float32 rounding, so the oracle rounds the scale to float32 first (a double that is no float32
// counts as its rounding, as in torch) and refuses a scale whose float32 is 0 or infinite. The
// difference is an integer in [-255, 255] (8 bits of magnitude) and the float32 scale holds 24, so
// their product holds at most 32 significant bits: exact in double. The reference is thus the
// exact value, which the judge rounds once to float32 (ties to even); no other float32 is right.
OracleResult dequantize(const Inputs& in, const AttrMap& attrs) {
  expect_count(in, 1);
  const std::vector<int64_t> x = int8_values(in, 0, "x");
  const double scale = attr_double(attrs, "scale");
  const int64_t zero_point = attr_int(attrs, "zero_point");
  if (!(scale > 0) || !std::isfinite(scale)) fail("scale must be finite and positive, got " + std::to_string(scale));
  if (zero_point < kInt8Min || zero_point > kInt8Max) fail("zero_point must lie in [-128, 127], got " + std::to_string(zero_point));
  const float sf = static_cast<float>(scale);
  if (!(sf > 0) || !std::isfinite(sf)) fail("scale rounds to " + std::to_string(sf) + " in float32 (scale " + std::to_string(scale) + ")");
  std::vector<double> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = double(x[i] - zero_point) * double(sf);  // exact: 8 bits times 24
  return make_result(at::tensor(at::ArrayRef<double>(out), at::kDouble).reshape(in.at(0).sizes()).clone());
}

// (a.int() @ b.int()).float() * a_scale * b_scale: the int32 accumulation is exact (computed here in
// int64, which also shows where int32 would have overflowed: refused), then scaled in float64. The
// three float32 roundings torch makes (int32 to float, two products) are the tolerance's, not here;
// the scale returned is |acc * a_scale * b_scale|, the magnitude those roundings are relative to.
OracleResult int8_matmul(const Inputs& in, const AttrMap&) {
  expect_count(in, 4);
  const std::vector<int64_t> a = int8_values(in, 0, "a"), b = int8_values(in, 1, "b");
  expect_rank(in[0], "a", 2);
  expect_rank(in[1], "b", 2);
  const int64_t m = in[0].size(0), k = in[0].size(1), n = in[1].size(1);
  if (in[1].size(0) != k) fail("b must have size(a, 1) = " + std::to_string(k) + " rows, got " + shape_str(in[1]));
  const at::Tensor a_scale = value_input(in, 2, "a_scale"), b_scale = value_input(in, 3, "b_scale");
  if (a_scale.numel() != 1) fail("a_scale must hold one value, got " + shape_str(a_scale));
  if (b_scale.numel() != n) fail("b_scale must hold size(b, 1) = " + std::to_string(n) + " values, got " + shape_str(b_scale));
  const double sa = a_scale.data_ptr<double>()[0];
  const double* sb = b_scale.data_ptr<double>();
  std::vector<double> out(size_t(m * n)), scale(size_t(m * n));
  // Row by row, walking b along its rows (i, t, j): the same exact integer sums as the textbook
  // (i, j, t) loop, whose column walk through b took 56 s at the timing gate's [512, 65536] x
  // [65536, 128] on the H200's host (a cache miss a term).
  std::vector<int64_t> row(static_cast<size_t>(n));
  for (int64_t i = 0; i < m; ++i) {
    std::fill(row.begin(), row.end(), 0);
    for (int64_t t = 0; t < k; ++t) {
      const int64_t av = a[size_t(i * k + t)];
      const int64_t* brow = b.data() + t * n;
      for (int64_t j = 0; j < n; ++j) row[size_t(j)] += av * brow[j];
    }
    for (int64_t j = 0; j < n; ++j) {
      const int64_t acc = row[size_t(j)];
      if (acc < std::numeric_limits<int32_t>::min() || acc > std::numeric_limits<int32_t>::max())
        fail("the int32 accumulation overflows at (" + std::to_string(i) + ", " + std::to_string(j) + "): K = " +
             std::to_string(k) + " is too large for the contract");
      out[size_t(i * n + j)] = double(acc) * sa * sb[j];
      scale[size_t(i * n + j)] = std::fabs(out[size_t(i * n + j)]);
    }
  }
  return make_result(at::tensor(at::ArrayRef<double>(out), at::kDouble).reshape({m, n}).clone(),
                     at::tensor(at::ArrayRef<double>(scale), at::kDouble).reshape({m, n}).clone());
}

// fp8_matmul: (a.float() @ b.float()) * a_scale * b_scale, a and b float8_e4m3fn (any floating
// dtype is accepted, so the oracle is tested where LibTorch has no float8). Every e4m3 value is a
// multiple of 2^-9 below 2^9, so each product is a multiple of 2^-18 below 2^18 and a float64 sum
// of K <= 2^16 of them needs at most 52 bits: the dot products are exact, in any order. The
// scales' two products add two float64 roundings (2^-53 relative): the reference a float32 kernel
// is judged against. Scale: sum_k |a_ik * b_kj| * |a_scale * b_scale_j|, the reduction bound's.
OracleResult fp8_matmul(const Inputs& in, const AttrMap&) {
  expect_count(in, 4);
  const at::Tensor a = value_input(in, 0, "a"), b = value_input(in, 1, "b");
  if (!at::isFloatingType(in[0].scalar_type()) || !at::isFloatingType(in[1].scalar_type()))
    fail("a and b must be floating (float8_e4m3fn), got " + std::string(at::toString(in[0].scalar_type())) + " and " +
         std::string(at::toString(in[1].scalar_type())));
  expect_rank(a, "a", 2);
  expect_rank(b, "b", 2);
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  if (b.size(0) != k) fail("b must have size(a, 1) = " + std::to_string(k) + " rows, got " + shape_str(b));
  const at::Tensor a_scale = value_input(in, 2, "a_scale"), b_scale = value_input(in, 3, "b_scale");
  if (a_scale.numel() != 1) fail("a_scale must hold one value, got " + shape_str(a_scale));
  if (b_scale.numel() != n) fail("b_scale must hold size(b, 1) = " + std::to_string(n) + " values, got " + shape_str(b_scale));
  const double* pa = a.data_ptr<double>();
  const double* pb = b.data_ptr<double>();
  const double sa = a_scale.data_ptr<double>()[0];
  const double* sb = b_scale.data_ptr<double>();
  std::vector<double> out(size_t(m * n)), scale(size_t(m * n));
  // Row by row, walking b along its rows (i, t, j), as int8_matmul: exact sums in any order.
  std::vector<double> row(static_cast<size_t>(n)), mag(static_cast<size_t>(n));
  for (int64_t i = 0; i < m; ++i) {
    std::fill(row.begin(), row.end(), 0.0);
    std::fill(mag.begin(), mag.end(), 0.0);
    for (int64_t t = 0; t < k; ++t) {
      const double av = pa[i * k + t];
      const double* brow = pb + t * n;
      for (int64_t j = 0; j < n; ++j) {
        row[size_t(j)] += av * brow[j];
        mag[size_t(j)] += std::fabs(av * brow[j]);
      }
    }
    for (int64_t j = 0; j < n; ++j) {
      out[size_t(i * n + j)] = row[size_t(j)] * sa * sb[j];
      scale[size_t(i * n + j)] = mag[size_t(j)] * std::fabs(sa * sb[j]);
    }
  }
  return make_result(at::tensor(at::ArrayRef<double>(out), at::kDouble).reshape({m, n}).clone(),
                     at::tensor(at::ArrayRef<double>(scale), at::kDouble).reshape({m, n}).clone());
}

}  // namespace gauntlet::oracle_impl
