// Tests of the fp64 oracles against hand-worked values, NaN/Inf semantics, casting and refusals.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "gauntlet/oracle/oracle.h"

using gauntlet::AttrMap;
using gauntlet::OracleResult;
using gauntlet::heavy_oracle_peak;
using gauntlet::heavy_oracle_permits;
using gauntlet::is_heavy_oracle_call;
using gauntlet::run_oracle;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

at::Tensor T(const std::vector<double>& v, std::vector<int64_t> shape,
             at::ScalarType dtype = at::kDouble) {
  return at::tensor(v, at::kDouble).reshape(shape).to(dtype);
}
at::Tensor T(const std::vector<double>& v) { return T(v, {static_cast<int64_t>(v.size())}); }
at::Tensor Idx(const std::vector<int64_t>& v) { return at::tensor(v, at::kLong); }

// Relative tolerance for fp64 oracle values against closed forms: a few fp64 ulps.
constexpr double kTol = 1e-14;

void expect_values(const at::Tensor& got, const std::vector<double>& want,
                   const std::vector<int64_t>& shape, double tol = kTol) {
  ASSERT_TRUE(got.defined());
  EXPECT_EQ(got.scalar_type(), at::kDouble);
  EXPECT_TRUE(got.is_contiguous());
  ASSERT_EQ(got.sizes().vec(), shape);
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size()));
  const double* g = got.data_ptr<double>();
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(g[i])) << "element " << i << ": got " << g[i] << ", want NaN";
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(g[i], want[i]) << "element " << i;
    } else {
      EXPECT_NEAR(g[i], want[i], tol * std::max(1.0, std::abs(want[i]))) << "element " << i;
    }
  }
}

OracleResult run_ok(const std::string& id, const std::vector<at::Tensor>& in,
                    const AttrMap& attrs = {}) {
  OracleResult r = run_oracle(id, in, attrs);
  EXPECT_TRUE(r.ok()) << id << ": " << r.error;
  EXPECT_EQ(r.outputs.size(), r.ok() ? 1u : 0u);
  EXPECT_EQ(r.scales.size(), r.outputs.size());
  if (!r.ok()) {
    r.outputs.assign(1, at::zeros({0}, at::kDouble));
    r.scales.assign(1, at::Tensor());
  }
  return r;
}

void expect_error(const std::string& id, const std::vector<at::Tensor>& in, const AttrMap& attrs,
                  const std::string& fragment) {
  OracleResult r = run_oracle(id, in, attrs);
  EXPECT_FALSE(r.ok()) << id << " accepted inputs it should refuse";
  EXPECT_TRUE(r.outputs.empty());
  EXPECT_EQ(r.error.find('\n'), std::string::npos) << r.error;
  EXPECT_NE(r.error.find(fragment), std::string::npos) << "error was: " << r.error;
}

AttrMap dim(int64_t d) { return {{"dim", d}}; }

const double ln2 = std::log(2.0), ln3 = std::log(3.0), ln6 = std::log(6.0);

}  // namespace

// The 21 required ops and, with their schemas, the next ones so far (segment_sum, filter, sort, topk,
// group_by_sum, scatter_add, quantize_per_tensor, dequantize, int8_matmul, unique, hash_join).
TEST(OracleIds, ListsEveryOpWithASchemaSorted) {
  const std::vector<std::string> want = {
      "add",        "amax",      "bmm",       "clamp",  "conv2d",       "cross_entropy",
      "cumsum",     "dequantize", "embedding", "filter",    "fp8_matmul", "gelu",   "group_by_sum", "hash_join", "int8_matmul", "layer_norm", "linear_relu",
      "log_softmax", "logsumexp", "matmul",   "mean",   "quantize_per_tensor", "relu", "rms_norm",   "scatter_add",
      "sdpa",       "segment_sum", "sigmoid", "softmax", "sort",        "sum",          "topk", "unique"};
  EXPECT_EQ(gauntlet::oracle_ids(), want);
}

TEST(Oracle, UnknownIdIsAnError) {
  const OracleResult r = run_oracle("no_such_op", {T({1})}, {});
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error.find("no_such_op"), std::string::npos);
}

TEST(Relu, HandValuesAndNaN) {
  const auto r = run_ok("relu", {T({-1.5, 0, 2, kNaN, -kInf, kInf})});
  expect_values(r.outputs[0], {0, 0, 2, kNaN, 0, kInf}, {6});
  EXPECT_FALSE(r.scales[0].defined());
}

TEST(Gelu, ExactErfForm) {
  // gelu(x) = x * Phi(x); Phi(1) = 0.8413447460685429, Phi(2) = 0.9772498680518208,
  // Phi(-10) = 7.619853024160527e-24 (standard normal tables).
  const auto r = run_ok("gelu", {T({0, 1, -1, 2, -10, kInf, -kInf, kNaN})});
  expect_values(r.outputs[0],
                {0, 0.8413447460685429, -0.15865525393145707, 1.9544997361036416,
                 -7.619853024160527e-23, kInf, kNaN, kNaN},
                {8}, 1e-13);
  // Scale |x|: the tolerance admits the 1+erf cancellation of the usual formula.
  ASSERT_TRUE(r.scales[0].defined());
  EXPECT_EQ(r.scales[0][4].item<double>(), 10.0);
}

TEST(Sigmoid, HandValues) {
  const auto r = run_ok("sigmoid", {T({0, ln3, -ln3, kInf, -kInf, kNaN, -800})});
  expect_values(r.outputs[0], {0.5, 0.75, 0.25, 1, 0, kNaN, 0}, {7});
  EXPECT_FALSE(r.scales[0].defined());
}

TEST(Add, Broadcasts) {
  const auto r = run_ok("add", {T({1, 2}, {2, 1}), T({10, 20, 30})});
  expect_values(r.outputs[0], {11, 21, 31, 12, 22, 32}, {2, 3});
  EXPECT_FALSE(r.scales[0].defined());
}

TEST(Add, IncompatibleShapesAreAnError) {
  expect_error("add", {T({1, 2, 3}), T({1, 2})}, {}, "add");
}

TEST(Clamp, HandValues) {
  const AttrMap attrs = {{"lo", -1.0}, {"hi", 2.0}};
  const auto r = run_ok("clamp", {T({-3, 0.5, 5, kNaN, -kInf})}, attrs);
  expect_values(r.outputs[0], {-1, 0.5, 2, kNaN, -1}, {5});
  EXPECT_FALSE(r.scales[0].defined());
}

TEST(Clamp, LoAboveHiGivesHi) {
  const auto r = run_ok("clamp", {T({-3, 0.5, 5})}, {{"lo", 3.0}, {"hi", 1.0}});
  expect_values(r.outputs[0], {1, 1, 1}, {3});
}

TEST(Clamp, MissingOrMistypedAttributeIsAnError) {
  expect_error("clamp", {T({1})}, {{"lo", 0.0}}, "'hi'");
  expect_error("clamp", {T({1})}, {{"lo", int64_t{0}}, {"hi", 1.0}}, "'lo' must be double");
}

TEST(Sum, HandValuesAndScale) {
  const at::Tensor x = T({1, 2, 3, 4, -5, 6}, {2, 3});
  auto r = run_ok("sum", {x}, dim(1));
  expect_values(r.outputs[0], {6, 5}, {2});
  expect_values(r.scales[0], {6, 15}, {2});
  r = run_ok("sum", {x}, dim(-2));
  expect_values(r.outputs[0], {5, -3, 9}, {3});
  expect_values(r.scales[0], {5, 7, 9}, {3});
}

TEST(Sum, ZeroDimInputGivesZeroDimOutput) {
  const auto r = run_ok("sum", {at::full({}, 2.5, at::kDouble)}, dim(0));
  expect_values(r.outputs[0], {2.5}, {});
}

TEST(Sum, BadDimIsAnError) {
  expect_error("sum", {T({1, 2}, {1, 2})}, dim(2), "out of range");
  expect_error("sum", {T({1, 2})}, {{"dim", 0.0}}, "'dim' must be int64");
  expect_error("sum", {T({1, 2})}, {}, "missing attribute 'dim'");
}

TEST(Sum, Fp16SumIsExactInFp64) {
  // 2048 + 1 + ... + 1: fp16 accumulation would stall at 2048 (spacing 2 there).
  at::Tensor x = at::ones({4096}, at::kHalf);
  x[0] = 2048;
  const auto r = run_ok("sum", {x}, dim(0));
  expect_values(r.outputs[0], {6143}, {});
}

TEST(Mean, HandValuesAndScale) {
  const auto r = run_ok("mean", {T({1, 2, 3, 4, -5, 6}, {2, 3})}, dim(1));
  expect_values(r.outputs[0], {2, 5.0 / 3}, {2});
  expect_values(r.scales[0], {2, 5}, {2});
}

TEST(Amax, NaNPropagates) {
  const at::Tensor x = T({1, kNaN, 3, 4, 5, -kInf}, {2, 3});
  auto r = run_ok("amax", {x}, dim(1));
  expect_values(r.outputs[0], {kNaN, 5}, {2});
  EXPECT_FALSE(r.scales[0].defined());
  r = run_ok("amax", {x}, dim(0));
  expect_values(r.outputs[0], {4, kNaN, 3}, {3});
}

TEST(Amax, EmptyDimIsAnError) {
  expect_error("amax", {at::zeros({2, 0}, at::kFloat)}, dim(1), "empty");
}

TEST(Logsumexp, HandValues) {
  // Rows: [0, ln2, ln3] -> ln 6; [1000, 1000, -inf] -> 1000 + ln 2 (needs the max shift).
  const auto r = run_ok("logsumexp", {T({0, ln2, ln3, 1000, 1000, -kInf}, {2, 3})}, dim(1));
  expect_values(r.outputs[0], {ln6, 1000 + ln2}, {2});
  // Scale 1 + |max| + |lse|: finite even with the -inf entry.
  expect_values(r.scales[0], {1 + ln3 + ln6, 1 + 1000 + 1000 + ln2}, {2});
}

TEST(Logsumexp, NonFiniteRows) {
  const auto r = run_ok(
      "logsumexp", {T({-kInf, -kInf, -kInf, 1, kInf, 2, 1, kNaN, 2, kInf, kNaN, 0}, {4, 3})},
      dim(1));
  expect_values(r.outputs[0], {-kInf, kInf, kNaN, kNaN}, {4});
}

TEST(Softmax, HandValues) {
  const auto r = run_ok("softmax", {T({0, ln2, ln3})}, dim(0));
  expect_values(r.outputs[0], {1.0 / 6, 2.0 / 6, 3.0 / 6}, {3});
  // y * (1 + |x - max|)
  expect_values(r.scales[0], {(1 + ln3) / 6, 2 * (1 + ln3 - ln2) / 6, 3.0 / 6}, {3});
}

TEST(Softmax, AllNegInfRowIsNaNAndMaskedEntriesAreZero) {
  const auto r = run_ok("softmax", {T({-kInf, -kInf, 0, -kInf, kNaN, 1}, {3, 2})}, dim(1));
  expect_values(r.outputs[0], {kNaN, kNaN, 1, 0, kNaN, kNaN}, {3, 2});
  // The masked entry's answer is exactly 0, so its scale is 0, not 0 * inf = NaN.
  EXPECT_EQ(r.scales[0][1][1].item<double>(), 0.0);
  EXPECT_EQ(r.scales[0][1][0].item<double>(), 1.0);
}

TEST(LogSoftmax, HandValues) {
  const auto r = run_ok("log_softmax", {T({0, ln2, ln3, -kInf, -kInf, -kInf}, {2, 3})}, dim(-1));
  expect_values(r.outputs[0], {-ln6, ln2 - ln6, ln3 - ln6, kNaN, kNaN, kNaN}, {2, 3});
  // 1 + |x - max| + |y|
  EXPECT_NEAR(r.scales[0][0][0].item<double>(), 1 + ln3 + ln6, 1e-14);
}

TEST(LayerNorm, HandValues) {
  // Rows [1,3] and [0,4]: mu 2, variance 1 and 4, so both normalize to [-1, 1].
  const AttrMap attrs = {{"eps", 0.0}};
  const auto r = run_ok("layer_norm", {T({1, 3, 0, 4}, {2, 2}), T({2, 3}), T({0.5, -1})}, attrs);
  expect_values(r.outputs[0], {-1.5, 2, -1.5, 2}, {2, 2});
  // |w|*(1 + |x-mu|/sigma + mean|x|/sigma) + |b|: row 0 sigma 1, mean|x| 2; row 1 sigma 2, mean|x| 2.
  expect_values(r.scales[0], {2 * 4 + 0.5, 3 * 4 + 1, 2 * 3 + 0.5, 3 * 3 + 1}, {2, 2});
}

TEST(LayerNorm, EpsEntersTheVariance) {
  // [1,3]: variance 1, + eps 3 -> sigma 2.
  const auto r = run_ok("layer_norm", {T({1, 3}), T({1, 1}), T({0, 0})}, {{"eps", 3.0}});
  expect_values(r.outputs[0], {-0.5, 0.5}, {2});
}

TEST(LayerNorm, WrongWeightSizeIsAnError) {
  expect_error("layer_norm", {T({1, 3}), T({1, 1, 1}), T({0, 0})}, {{"eps", 1e-5}}, "weight");
}

TEST(RmsNorm, HandValues) {
  // [3,-3,3,-3]: mean square 9, r = 1/3; [3,4] with eps 3.5: (12.5 + 3.5) -> r = 1/4.
  auto r = run_ok("rms_norm", {T({3, -3, 3, -3}), T({1, 2, 3, 4})}, {{"eps", 0.0}});
  expect_values(r.outputs[0], {1, -2, 3, -4}, {4});
  expect_values(r.scales[0], {1, 2, 3, 4}, {4});
  r = run_ok("rms_norm", {T({3, 4}), T({1, -2})}, {{"eps", 3.5}});
  expect_values(r.outputs[0], {0.75, -2}, {2});
}

TEST(Matmul, HandValuesAndScale) {
  auto r = run_ok("matmul", {T({1, 2, 3, 4}, {2, 2}), T({5, 6, 7, 8}, {2, 2})});
  expect_values(r.outputs[0], {19, 22, 43, 50}, {2, 2});
  r = run_ok("matmul", {T({1, -2}, {1, 2}), T({3, 4}, {2, 1})});
  expect_values(r.outputs[0], {-5}, {1, 1});
  expect_values(r.scales[0], {11}, {1, 1});
}

TEST(Matmul, Bf16InputsAreCastBeforeMultiplying) {
  // A bf16 accumulator stalls at 256 for a row of ones and at 2048 for [2048, 1, ..., 1].
  auto r = run_ok("matmul", {at::ones({1, 2048}, at::kBFloat16), at::ones({2048, 1}, at::kBFloat16)});
  expect_values(r.outputs[0], {2048}, {1, 1});
  at::Tensor a = at::ones({1, 4096}, at::kBFloat16);
  a[0][0] = 2048;
  r = run_ok("matmul", {a, at::ones({4096, 1}, at::kBFloat16)});
  expect_values(r.outputs[0], {6143}, {1, 1});
}

TEST(Matmul, ZeroTimesInfIsNaN) {
  const auto r = run_ok("matmul", {T({0, 1, 1, 1}, {2, 2}), T({kInf, 1}, {2, 1})});
  expect_values(r.outputs[0], {kNaN, kInf}, {2, 1});
}

TEST(Matmul, ShapeErrors) {
  expect_error("matmul", {T({1, 2}, {1, 2}), T({1, 2, 3}, {3, 1})}, {}, "K");
  expect_error("matmul", {T({1, 2}, {1, 1, 2}), T({1, 2}, {2, 1})}, {}, "rank");
  expect_error("matmul", {T({1, 2}, {1, 2})}, {}, "expected 2 input");
}

TEST(LinearRelu, HandValues) {
  // x@w.T + b = [1+2+0.5, 1-4+0.5] = [3.5, -2.5] -> relu [3.5, 0].
  const auto r = run_ok("linear_relu", {T({1, 2}, {1, 2}), T({1, 1, 1, -2}, {2, 2}), T({0.5, 0.5})});
  expect_values(r.outputs[0], {3.5, 0}, {1, 2});
  expect_values(r.scales[0], {3.5, 5.5}, {1, 2});
}

TEST(Bmm, HandValues) {
  // Batch 0: [1,2].[3,4] = 11; batch 1: [-1,1].[2,5] = 3.
  const auto r = run_ok("bmm", {T({1, 2, -1, 1}, {2, 1, 2}), T({3, 4, 2, 5}, {2, 2, 1})});
  expect_values(r.outputs[0], {11, 3}, {2, 1, 1});
  expect_values(r.scales[0], {11, 7}, {2, 1, 1});
}

TEST(Conv2d, HandValues) {
  const at::Tensor x = T({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3});
  const at::Tensor w = at::ones({1, 1, 2, 2}, at::kDouble);
  auto r = run_ok("conv2d", {x, w, T({1})}, {{"stride", int64_t{1}}, {"padding", int64_t{0}}});
  expect_values(r.outputs[0], {13, 17, 25, 29}, {1, 1, 2, 2});
  expect_values(r.scales[0], {13, 17, 25, 29}, {1, 1, 2, 2});
  // Stride 2, padding 1: windows rows/cols {-1,0} and {1,2}.
  r = run_ok("conv2d", {x, w, T({1})}, {{"stride", int64_t{2}}, {"padding", int64_t{1}}});
  expect_values(r.outputs[0], {2, 6, 12, 29}, {1, 1, 2, 2});
}

TEST(Conv2d, ChannelMismatchIsAnError) {
  expect_error("conv2d",
               {at::zeros({1, 2, 3, 3}, at::kFloat), at::zeros({1, 1, 2, 2}, at::kFloat), T({0})},
               {{"stride", int64_t{1}}, {"padding", int64_t{0}}}, "C");
}

TEST(Sdpa, HandValuesWithAndWithoutCausalMask) {
  // D = 4, scale 1/2. Query 0 . key 1 = 2 ln3 -> logits [0, ln3] -> P [1/4, 3/4];
  // query 1 is zero -> P [1/2, 1/2]. Causal: query 0 sees only key 0.
  const at::Tensor q = T({ln3, 0, 0, 0, 0, 0, 0, 0}, {1, 1, 2, 4});
  const at::Tensor k = T({0, 0, 0, 0, 2, 0, 0, 0}, {1, 1, 2, 4});
  const at::Tensor v = T({4, 0, 0, 8, 0, 4, 0, -8}, {1, 1, 2, 4});
  auto r = run_ok("sdpa", {q, k, v}, {{"causal", false}});
  expect_values(r.outputs[0], {1, 3, 0, -4, 2, 2, 0, 0}, {1, 1, 2, 4});
  // (P@|V|) * (1 + max_j |q_i|.|k_j| / 2): row 0 -> [1,3,0,8]*(1+ln3), row 1 -> [2,2,0,8].
  expect_values(r.scales[0],
                {1 + ln3, 3 * (1 + ln3), 0, 8 * (1 + ln3), 2, 2, 0, 8}, {1, 1, 2, 4});
  r = run_ok("sdpa", {q, k, v}, {{"causal", true}});
  expect_values(r.outputs[0], {4, 0, 0, 8, 2, 2, 0, 0}, {1, 1, 2, 4});
  // The hidden key's |q|.|k| must not enter row 0's scale.
  expect_values(r.scales[0], {4, 0, 0, 8, 2, 2, 0, 8}, {1, 1, 2, 4});
}

TEST(Sdpa, MistypedCausalIsAnError) {
  const at::Tensor t = at::zeros({1, 1, 2, 4}, at::kFloat);
  expect_error("sdpa", {t, t, t}, {{"causal", int64_t{1}}}, "'causal' must be bool");
}

TEST(Cumsum, HandValuesAndScale) {
  auto r = run_ok("cumsum", {T({1, 2, -3, 4})}, dim(0));
  expect_values(r.outputs[0], {1, 3, 0, 4}, {4});
  expect_values(r.scales[0], {1, 3, 6, 10}, {4});
  r = run_ok("cumsum", {T({1, 2, 3, 4}, {2, 2})}, dim(0));
  expect_values(r.outputs[0], {1, 2, 4, 6}, {2, 2});
}

TEST(Embedding, GathersRows) {
  const auto r = run_ok("embedding", {T({1, 2, 3, 4, 5, 6}, {3, 2}), Idx({2, 0, 2})});
  expect_values(r.outputs[0], {5, 6, 1, 2, 5, 6}, {3, 2});
  EXPECT_FALSE(r.scales[0].defined());
}

TEST(Embedding, OutOfRangeIndexIsAnError) {
  const at::Tensor w = T({1, 2, 3, 4, 5, 6}, {3, 2});
  expect_error("embedding", {w, Idx({0, 3})}, {}, "idx[1] = 3 is outside [0, 3)");
  expect_error("embedding", {w, Idx({-1})}, {}, "outside");
  expect_error("embedding", {w, T({0})}, {}, "integer dtype");
}

TEST(CrossEntropy, HandValues) {
  // Row 0: lse ln6, target logit ln3 -> ln2. Row 1: lse ln3, target logit 0 -> ln3. Mean ln6/2.
  const auto r = run_ok("cross_entropy", {T({0, ln2, ln3, 0, 0, 0}, {2, 3}), Idx({2, 0})});
  expect_values(r.outputs[0], {ln6 / 2}, {});
  expect_values(r.scales[0], {((1 + ln6 + ln3) + (1 + ln3)) / 2}, {});
}

TEST(CrossEntropy, TargetOutOfRangeIsAnError) {
  const at::Tensor x = T({0, 0, 0, 0}, {2, 2});
  expect_error("cross_entropy", {x, Idx({0, 2})}, {}, "outside [0, 2)");
  expect_error("cross_entropy", {x, Idx({-100, 0})}, {}, "outside");
}

TEST(Oracle, LowPrecisionAndStridedInputsGiveContiguousFloat64) {
  // A transposed fp16 view: the oracle must read it by its strides, then hand back fp64.
  const at::Tensor x = T({1, 2, 3, 4, 5, 6}, {3, 2}, at::kHalf).t();
  ASSERT_FALSE(x.is_contiguous());
  const auto r = run_ok("cumsum", {x}, dim(1));
  expect_values(r.outputs[0], {1, 4, 9, 2, 6, 12}, {2, 3});
  expect_values(r.scales[0], {1, 4, 9, 2, 6, 12}, {2, 3});
}

TEST(Oracle, ExactOpsHaveNoScalesAndReductionsDo) {
  const at::Tensor x = T({1, 2, 3, 4}, {2, 2}, at::kFloat);
  for (const char* id : {"relu", "sigmoid"})
    EXPECT_FALSE(run_ok(id, {x}).scales[0].defined()) << id;
  for (const char* id : {"sum", "mean", "logsumexp", "softmax", "log_softmax", "cumsum"}) {
    const auto r = run_ok(id, {x}, dim(1));
    ASSERT_TRUE(r.scales[0].defined()) << id;
    EXPECT_EQ(r.scales[0].sizes(), r.outputs[0].sizes()) << id;
    EXPECT_EQ(r.scales[0].scalar_type(), at::kDouble) << id;
  }
}

TEST(Oracle, BoolInputIsAnError) {
  expect_error("relu", {at::ones({2}, at::kBool)}, {}, "not a real number type");
}

// Heavy oracle calls (a problem's own sizes) take turns: never more at once than ATen's thread
// team fits in the cores. Twice the permits' threads each make heavy calls; without the turns
// they overlap past the permits (each call below takes tens of milliseconds).
TEST(OracleTurns, HeavyCallsNeverRunPastThePermits) {
  const at::Tensor a = at::randn({1024, 1024});  // 1M elements: heavy
  const at::Tensor b = at::randn({1024, 16});
  ASSERT_TRUE(is_heavy_oracle_call({a, b}));
  ASSERT_FALSE(is_heavy_oracle_call({at::randn({512, 512}), at::randn({512, 16})}));
  const int permits = heavy_oracle_permits();
  ASSERT_GE(permits, 1);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 2 * permits + 2; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 3; ++i)
        if (!run_oracle("matmul", {a, b}, {}).error.empty()) ++failures;
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GE(heavy_oracle_peak(), 1) << "the heavy calls went through the turns";
  EXPECT_LE(heavy_oracle_peak(), permits);
}
