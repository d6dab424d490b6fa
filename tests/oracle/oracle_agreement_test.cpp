// Every oracle against ATen's own op in float64 on special inputs: NaN-ness and the signs of infinities agree, or the difference is a documented exception.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "gauntlet/kernel_abi.h"
#include "gauntlet/oracle/oracle.h"
#include "../../src/worker/library_baseline.h"

namespace gauntlet {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kSub = 4.9406564584124654e-324;  // the smallest subnormal

at::Tensor f64(std::vector<double> v, std::vector<int64_t> shape) {
  return at::tensor(v, at::kDouble).reshape(shape).contiguous();
}

// Rows that put special values where reductions and normalisations meet them: NaN alone and in a
// whole row, each infinity alone, both, whole rows of one, signed zeros, subnormals, values whose
// sum overflows, and plain values as a control. Eight columns.
at::Tensor special_rows() {
  const std::vector<std::vector<double>> rows = {
      {kNaN, 1, 2, 3, 4, 5, 6, 7},
      {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN},
      {kInf, 1, 2, 3, 4, 5, 6, 7},
      {-kInf, 1, 2, 3, 4, 5, 6, 7},
      {kInf, -kInf, 2, 3, 4, 5, 6, 7},
      {kInf, kInf, kInf, kInf, kInf, kInf, kInf, kInf},
      {-kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf, -kInf},
      {0.0, -0.0, 0.0, -0.0, 0.0, -0.0, 0.0, -0.0},
      {kSub, -kSub, kSub, kSub, 2 * kSub, -kSub, kSub, kSub},
      {1e308, 1e308, 1e308, 1e308, -1, 2, -3, 4},
      {kNaN, kInf, -kInf, 0.0, 1, 2, 3, 4},
      {0.5, -1.5, 2.25, -3.0, 4.5, -0.75, 1.25, 2.0},
  };
  std::vector<double> flat;
  for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  return f64(flat, {int64_t(rows.size()), 8});
}

// The values of special_rows() as one vector, for elementwise ops.
at::Tensor special_values() { return special_rows().reshape({-1}).contiguous(); }

// Finite, varied values for the inputs that are not under test; offset 0.5 makes every seventh one an
// exact zero (0 * inf is NaN in IEEE arithmetic, in the oracle and on a GPU).
at::Tensor plain(std::vector<int64_t> shape, double offset) {
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  return (at::arange(numel, at::kDouble).remainder(7.0) * 0.25 - 0.5 + offset).reshape(shape).contiguous();
}

struct Case {
  std::vector<at::Tensor> tensors;
  std::vector<KernelArg> attrs;  // the schema's attributes, in order (for the library call)
  AttrMap named;                 // the same, by name (for the oracle)
};

KernelArg int_arg(int64_t v) { KernelArg a; a.kind = KernelArg::Kind::Int; a.i = v; return a; }
KernelArg double_arg(double v) { KernelArg a; a.kind = KernelArg::Kind::Double; a.d = v; return a; }
KernelArg bool_arg(bool v) { KernelArg a; a.kind = KernelArg::Kind::Bool; a.b = v; return a; }

Case dim1(at::Tensor x) { return {{x}, {int_arg(1)}, {{"dim", int64_t(1)}}}; }

std::string show(double v);

// Special inputs for each op, in the schema's argument order.
std::map<std::string, Case> cases() {
  const at::Tensor rows = special_rows();
  const at::Tensor values = special_values();
  const int64_t n = values.numel();
  std::map<std::string, Case> c;
  for (const char* op : {"relu", "gelu", "sigmoid"}) c[op] = {{values}, {}, {}};
  c["clamp"] = {{values}, {double_arg(-1.0), double_arg(1.0)}, {{"lo", -1.0}, {"hi", 1.0}}};
  // Every special value against every other.
  c["add"] = {{values.reshape({n, 1}).expand({n, n}).contiguous(), values.reshape({1, n}).expand({n, n}).contiguous()}, {}, {}};
  for (const char* op : {"sum", "mean", "amax", "logsumexp", "softmax", "log_softmax", "cumsum"}) c[op] = dim1(rows);
  c["layer_norm"] = {{rows, plain({8}, 1.0), plain({8}, 0.0)}, {double_arg(1e-5)}, {{"eps", 1e-5}}};
  c["rms_norm"] = {{rows, plain({8}, 1.0)}, {double_arg(1e-5)}, {{"eps", 1e-5}}};
  c["matmul"] = {{rows, plain({8, 5}, 0.5)}, {}, {}};
  c["linear_relu"] = {{rows, plain({5, 8}, 0.5), plain({5}, 0.0)}, {}, {}};
  c["bmm"] = {{rows.reshape({2, 6, 8}), plain({2, 8, 3}, 0.5)}, {}, {}};
  c["conv2d"] = {{rows.reshape({1, 2, 6, 8}), plain({3, 2, 3, 3}, 0.1), plain({3}, 0.0)},
                 {int_arg(1), int_arg(1)}, {{"stride", int64_t(1)}, {"padding", int64_t(1)}}};
  for (bool causal : {false, true}) {
    const std::string name = causal ? "sdpa/causal" : "sdpa";
    c[name] = {{rows.reshape({1, 2, 6, 8}), plain({1, 2, 6, 8}, 0.2), plain({1, 2, 6, 8}, -0.1)},
               {bool_arg(causal)}, {{"causal", causal}}};
  }
  c["embedding"] = {{rows, at::tensor(std::vector<int64_t>{0, 2, 5, 11, 2}, at::kLong)}, {}, {}};
  // segment_sum: every row a segment of its own (empty ones between), then rows summed in groups
  // (NaN beside infinities, +inf with -inf, the overflowing row with a plain one).
  c["segment_sum/rows"] = {
      {rows, at::tensor(std::vector<int64_t>{0, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 12}, at::kLong)}, {}, {}};
  c["segment_sum/groups"] = {{rows, at::tensor(std::vector<int64_t>{0, 3, 3, 7, 10, 12}, at::kLong)}, {}, {}};
  // filter: every special value against a plain threshold, -inf, +inf and NaN (NaN never kept).
  for (double t : {0.5, -kInf, kInf, kNaN})
    c["filter/" + show(t)] = {{values}, {double_arg(t)}, {{"threshold", t}}};
  // sort: every special value as a key (NaN last, signed zeros tied), the positions as values.
  c["sort"] = {{values, at::arange(n, at::kLong)}, {}, {}};
  // topk: each special row's 3 largest and all 8 (NaN first, +inf before finite values, signed
  // zeros tied); the indices' tie order is free, their NaN-free values are compared exactly.
  for (int64_t k : {int64_t(3), int64_t(8)})
    c["topk/" + std::to_string(k)] = {{rows}, {int_arg(k)}, {{"k", k}}};
  // group_by_sum and scatter_add: the 96 special values into 13 groups, a value's key its position
  // mod 13 (every special value beside others, group 12 short), and all into group 0 of 3 (two
  // groups no key names).
  std::vector<int64_t> mod13(static_cast<size_t>(n)), zeros(static_cast<size_t>(n), 0);
  for (int64_t i = 0; i < n; ++i) mod13[size_t(i)] = i % 13;
  for (const auto& [name, keys, groups] :
       {std::tuple<const char*, std::vector<int64_t>, int64_t>{"mod13", mod13, 13}, {"one", zeros, 3}}) {
    const at::Tensor k = at::tensor(keys, at::kLong);
    c[std::string("group_by_sum/") + name] = {{k, values}, {int_arg(groups)}, {{"num_groups", groups}}};
    c[std::string("scatter_add/") + name] = {{values, k}, {int_arg(groups)}, {{"size", groups}}};
  }
  // quantize_per_tensor: float32 x with each infinity alone and in whole rows (they saturate); NaN has
  // no quantized value (the oracle refuses it, the schema's nan_inf.inputs leaves it out).
  const at::Tensor finite_rows = at::where(at::isnan(rows), at::zeros_like(rows), rows).to(at::kFloat);
  for (double scale : {0.5, 0.037})
    c["quantize_per_tensor/" + std::to_string(scale)] = {
        {at::where(at::isfinite(finite_rows), finite_rows.clamp(-1e30, 1e30), finite_rows).contiguous()},
        {double_arg(scale), int_arg(3)}, {{"scale", scale}, {"zero_point", int64_t(3)}}};
  // dequantize: int8 data has no special values; its ends and their neighbours against zero points
  // at both limits (differences of +-255), at a subnormal, a plain and a huge scale (255 * 2^120
  // still finite in float32): neither side may make a NaN or an infinity.
  {
    const at::Tensor ends = at::tensor(std::vector<int64_t>{-128, 127, 0, -1, 1, 126, -127}, at::kLong).to(at::kChar);
    for (int64_t zp : {int64_t(-128), int64_t(127)})
      for (double scale : {std::ldexp(1.0, -127), 0.1, std::ldexp(1.0, 120)})
        c["dequantize/" + std::to_string(zp) + "/" + show(scale)] = {
            {ends}, {double_arg(scale), int_arg(zp)}, {{"scale", scale}, {"zero_point", zp}}};
  }
  // int8_matmul: int8 data (zeros among them) against scales holding NaN, each infinity and zero.
  {
    const at::Tensor a = (at::arange(24, at::kLong).remainder(9) - 4).reshape({3, 8}).to(at::kChar);
    const at::Tensor b = (at::arange(40, at::kLong).remainder(5) - 2).reshape({8, 5}).to(at::kChar);
    const at::Tensor sb = at::tensor(std::vector<float>{0.5f, float(kNaN), float(kInf), float(-kInf), 0.0f});
    for (float sa : {0.25f, float(kNaN), float(kInf), float(-kInf)})
      c["int8_matmul/" + std::to_string(sa)] = {{a, b, at::tensor(std::vector<float>{sa}), sb}, {}, {}};
  }
  // fp8_matmul: e4m3 values (held in float32: this LibTorch may lack float8), NaN and zeros among
  // them, against the same scales; products and sums are exact in float32, so ATen's float32 GEMM
  // agrees with the float64 oracle wherever both are finite.
  {
    const at::Tensor a = at::tensor(std::vector<float>{1.5f, -2.0f, 0.0f, float(kNaN), 0.125f, 448.0f}).reshape({2, 3});
    const at::Tensor b = at::tensor(std::vector<float>{0.5f, 0.0f, -1.0f, 3.0f, 0.25f, 2.0f}).reshape({3, 2});
    const at::Tensor sb = at::tensor(std::vector<float>{0.5f, float(kInf)});
    for (float sa : {0.25f, float(kNaN), float(-kInf)})
      c["fp8_matmul/" + std::to_string(sa)] = {{a, b, at::tensor(std::vector<float>{sa}), sb}, {}, {}};
  }
  // unique and hash_join: int64 keys have no NaN or infinity; their special values are the ends of
  // int64 (repeated, beside 0 and -1), and an empty input (no values, no pairs).
  {
    constexpr int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
    const at::Tensor ends = at::tensor(std::vector<int64_t>{hi, lo, 0, lo + 1, -1, hi, lo, hi - 1, 0, hi}, at::kLong);
    const at::Tensor other = at::tensor(std::vector<int64_t>{lo, 7, hi, hi - 1, lo, 0}, at::kLong);
    const at::Tensor none = at::empty({0}, at::kLong);
    c["unique/ends"] = {{ends}, {}, {}};
    c["unique/empty"] = {{none}, {}, {}};
    c["hash_join/ends"] = {{ends, other}, {}, {}};
    c["hash_join/empty"] = {{ends, none}, {}, {}};
  }
  // cross_entropy's mean would hide a row's NaN behind another's: each row alone, with a target on
  // its first (often special) class and on a plain one.
  for (int64_t i = 0; i < rows.size(0); ++i)
    for (int64_t t : {0, 5})
      c["cross_entropy/row" + std::to_string(i) + "/target" + std::to_string(t)] = {
          {rows.slice(0, i, i + 1).contiguous(), at::tensor(std::vector<int64_t>{t}, at::kLong)}, {}, {}};
  return c;
}

// Where an oracle deliberately differs from ATen's float64 op on these inputs, and why. Each entry
// names the op, and every mismatch found must belong to an op listed here (and each listed op must
// still differ: an exception nobody needs is removed).
const std::map<std::string, std::string>& documented_exceptions() {
  static const std::map<std::string, std::string> e = {
  };
  return e;
}

std::string show(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// The first element whose NaN-ness or infinite sign differs, or "".
std::string first_difference(const at::Tensor& oracle, const at::Tensor& library) {
  if (oracle.sizes() != library.sizes()) return "shapes differ";
  const at::Tensor a = oracle.to(at::kDouble).contiguous().reshape({-1});
  const at::Tensor b = library.to(at::kDouble).contiguous().reshape({-1});
  const double* pa = a.data_ptr<double>();
  const double* pb = b.data_ptr<double>();
  for (int64_t i = 0; i < a.numel(); ++i) {
    const bool nan_a = std::isnan(pa[i]), nan_b = std::isnan(pb[i]);
    const bool inf_a = std::isinf(pa[i]), inf_b = std::isinf(pb[i]);
    if (nan_a != nan_b || inf_a != inf_b || (inf_a && std::signbit(pa[i]) != std::signbit(pb[i])))
      return "element " + std::to_string(i) + ": oracle " + show(pa[i]) + ", ATen " + show(pb[i]);
  }
  return "";
}

TEST(OracleAgreement, SpecialValuesAgreeWithAtenOrAreDocumented) {
  std::set<std::string> differing;
  std::set<std::string> covered;
  for (auto& [name, c] : cases()) {
    const std::string op = name.substr(0, name.find('/'));
    covered.insert(op);
    ASSERT_TRUE(worker::has_library_baseline(op)) << op;
    const OracleResult r = run_oracle(op, c.tensors, c.named);
    ASSERT_TRUE(r.ok()) << name << ": " << r.error;
    std::vector<KernelArg> args;
    for (const at::Tensor& t : c.tensors) {
      KernelArg a;
      a.tensor = t;
      args.push_back(a);
    }
    args.insert(args.end(), c.attrs.begin(), c.attrs.end());
    std::vector<at::Tensor> lib;
    std::string error;
    ASSERT_TRUE(worker::library_baseline(op, args, &lib, &error)) << name << ": " << error;
    ASSERT_EQ(lib.size(), r.outputs.size()) << name;
    std::string diff;
    for (size_t i = 0; i < lib.size() && diff.empty(); ++i) diff = first_difference(r.outputs.at(i), lib[i]);
    if (diff.empty()) continue;
    differing.insert(op);
    EXPECT_TRUE(documented_exceptions().count(op)) << name << " disagrees with ATen in float64 on special inputs, "
                                                   << "undocumented: " << diff;
  }
  for (const auto& [op, why] : documented_exceptions())
    EXPECT_TRUE(differing.count(op)) << op << " is listed as an exception (" << why << ") but agrees with ATen now";
  // Every oracle is covered.
  for (const std::string& id : oracle_ids()) EXPECT_TRUE(covered.count(id)) << "no special-value case for " << id;
}

}  // namespace
}  // namespace gauntlet
