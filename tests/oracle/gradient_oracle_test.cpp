// Tests of the fp64 gradient reference: autograd against hand-derived gradients and finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "gauntlet/cases/case.h"
#include "gauntlet/oracle/gradient_oracle.h"
#include "gauntlet/oracle/oracle.h"

using namespace gauntlet;

namespace {

// Seeded, not random: the tests must be reproducible.
at::Tensor values(std::vector<int64_t> shape, double phase, at::ScalarType dtype = at::kDouble) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return (at::sin(at::arange(n, at::kDouble) * 1.37 + phase) * 2.0).reshape(shape).to(dtype);
}

double max_rel_diff(const at::Tensor& a, const at::Tensor& b) {
  return ((a - b).abs().max() / (b.abs().max() + 1e-300)).item<double>();
}

TEST(GradientOracle, SoftmaxAutogradMatchesTheHandDerivedGradient) {
  for (int64_t dim : {-1, 0}) {
    const at::Tensor x = values({5, 7}, 0.3), g = values({5, 7}, 1.1);
    GradientReference r = gradient_reference("softmax", {x}, {{"dim", dim}}, {g});
    ASSERT_TRUE(r.ok()) << r.error;
    EXPECT_EQ(r.method, "autograd");
    const at::Tensor y = at::softmax(x, dim);
    const at::Tensor want = y * (g - (y * g).sum(dim, true));
    ASSERT_EQ(r.grads.size(), 1u);
    EXPECT_LT(max_rel_diff(r.grads[0], want), 1e-13) << "dim " << dim;
    // Every output of the slice depends on every input of it: K = the slice length.
    EXPECT_EQ(r.terms[0].min().item<int64_t>(), x.size(dim));
    EXPECT_EQ(r.terms[0].max().item<int64_t>(), x.size(dim));
    EXPECT_TRUE((r.scales[0] >= r.grads[0].abs() * (1 - 1e-12)).all().item<bool>());
  }
}

TEST(GradientOracle, LayerNormAutogradMatchesTheHandDerivedGradients) {
  const at::Tensor x = values({4, 6}, 0.2), w = values({6}, 0.7), b = values({6}, 2.0), g = values({4, 6}, 1.9);
  const double eps = 1e-5;
  GradientReference r = gradient_reference("layer_norm", {x, w, b}, {{"eps", eps}}, {g});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.method, "autograd");
  const at::Tensor mu = x.mean(-1, true);
  const at::Tensor rstd = 1.0 / at::sqrt(((x - mu) * (x - mu)).mean(-1, true) + eps);
  const at::Tensor xhat = (x - mu) * rstd, wg = w * g;
  const at::Tensor dx = rstd * (wg - wg.mean(-1, true) - xhat * (wg * xhat).mean(-1, true));
  ASSERT_EQ(r.grads.size(), 3u);
  EXPECT_LT(max_rel_diff(r.grads[0], dx), 1e-12);
  EXPECT_LT(max_rel_diff(r.grads[1], (g * xhat).sum(0)), 1e-12);
  EXPECT_LT(max_rel_diff(r.grads[2], g.sum(0)), 1e-13);
  // dbias sums g over the 4 rows: scale sum|g|, K = 4, and it does not depend on the inputs.
  EXPECT_LT(max_rel_diff(r.scales[2], g.abs().sum(0)), 1e-13);
  EXPECT_EQ(r.sensitivity[2].abs().max().item<double>(), 0.0);
  // dx depends on x through the row's mean and rstd: a nonzero sensitivity everywhere.
  EXPECT_GT(r.sensitivity[0].min().item<double>(), 0.0);
  EXPECT_EQ(r.terms[2].min().item<int64_t>(), 4);
}

TEST(GradientOracle, FiniteDifferencesAgreeWithAutograd) {
  const at::Tensor x = values({3, 5}, 0.5, at::kHalf), w = values({5}, 0.1, at::kHalf), b = values({5}, 0.9, at::kHalf);
  const at::Tensor g = values({3, 5}, 2.3, at::kHalf);
  GradientOptions fd;
  fd.force_finite_differences = true;
  for (const auto& [op, in, attrs] :
       std::vector<std::tuple<std::string, std::vector<at::Tensor>, AttrMap>>{
           {"layer_norm", {x, w, b}, {{"eps", 1e-5}}}, {"softmax", {x}, {{"dim", int64_t(1)}}}, {"sum", {x}, {{"dim", int64_t(0)}}}}) {
    const std::vector<at::Tensor> go = {op == "sum" ? values({5}, 0.4) : g};
    GradientReference a = gradient_reference(op, in, attrs, go);
    GradientReference f = gradient_reference(op, in, attrs, go, fd);
    ASSERT_TRUE(a.ok() && f.ok()) << a.error << f.error;
    EXPECT_EQ(a.method, "autograd");
    EXPECT_EQ(f.method.rfind("finite differences", 0), 0u) << f.method;
    for (size_t k = 0; k < a.grads.size(); ++k) {
      EXPECT_LT(max_rel_diff(f.grads[k], a.grads[k]), 1e-8) << op << " input " << k;
      // The finite-difference sensitivity is an estimate from three directions, never above the sum.
      EXPECT_LT(max_rel_diff(f.scales[k] - f.sensitivity[k], a.scales[k] - a.sensitivity[k]), 1e-8) << op << " " << k;
      // (up to the inner differences' noise, ~1e-6 of the gradient)
      EXPECT_TRUE((f.sensitivity[k] <= a.sensitivity[k] * (1 + 1e-3) + 1e-5 * (a.grads[k].abs() + 1)).all().item<bool>())
          << op << " " << k << ": " << (f.sensitivity[k] - a.sensitivity[k]).max().item<double>();
      EXPECT_EQ(a.grads[k].scalar_type(), at::kDouble);
      EXPECT_EQ(a.grads[k].sizes(), in[k].sizes());
    }
  }
}

TEST(GradientOracle, MatmulScaleIsTheAbsoluteProduct) {
  const at::Tensor a = values({3, 4}, 0.0), b = values({4, 2}, 1.0), g = values({3, 2}, 2.0);
  GradientReference r = gradient_reference("matmul", {a, b}, {}, {g});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_LT(max_rel_diff(r.grads[0], at::mm(g, b.t())), 1e-14);
  EXPECT_LT(max_rel_diff(r.grads[1], at::mm(a.t(), g)), 1e-14);
  // |J|^T|g| = |g| @ |B|^T; dA = g B^T moves with B by the same magnitudes: sensitivity |g| @ |B|^T.
  EXPECT_LT(max_rel_diff(r.sensitivity[0], at::mm(g.abs(), b.abs().t())), 1e-14);
  EXPECT_LT(max_rel_diff(r.scales[0], 2 * at::mm(g.abs(), b.abs().t())), 1e-14);
  EXPECT_EQ(r.terms[1].max().item<int64_t>(), 3);  // dB sums over the M = 3 rows
}

TEST(GradientOracle, IndexInputsHaveNoGradient) {
  const at::Tensor weight = values({5, 3}, 0.0), idx = at::tensor(std::vector<int64_t>{4, 0, 4}, at::kLong);
  GradientReference r = gradient_reference("embedding", {weight, idx}, {}, {values({3, 3}, 1.0)});
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_EQ(r.grads.size(), 2u);
  EXPECT_TRUE(r.grads[0].defined());
  EXPECT_FALSE(r.grads[1].defined());
  // Row 4 is gathered twice: its gradient is the sum of two output rows (K = 2).
  EXPECT_EQ(r.terms[0][4][0].item<int64_t>(), 2);
  EXPECT_EQ(r.terms[0][1][0].item<int64_t>(), 0);
}

TEST(GradientOracle, RefusalsComeBackAsErrors) {
  const at::Tensor x = values({2, 3}, 0.0);
  EXPECT_FALSE(gradient_reference("softmax", {x}, {{"dim", int64_t(-1)}}, {}).ok());  // no output gradient
  EXPECT_FALSE(gradient_reference("softmax", {x}, {{"dim", int64_t(-1)}}, {values({3, 2}, 0.0)}).ok());
  EXPECT_FALSE(gradient_reference("no_such_op", {x}, {}, {x}).ok());
  GradientOptions tiny;
  tiny.max_jacobian_entries = 10;
  EXPECT_FALSE(gradient_reference("softmax", {x}, {{"dim", int64_t(-1)}}, {x}, tiny).ok());
}

// Every op's oracle has a gradient reference on a small case of its own schema: by autograd (the
// directional check agrees), except the elementwise oracles written as scalar loops (relu, gelu,
// sigmoid, clamp), which leave the autograd graph and get central finite differences.
TEST(GradientOracle, EveryOracleIsDifferentiableOnASmallCase) {
  for (const std::string& op : oracle_ids()) {
    // Integer ops: the gradients gate skips them (an int8 output, int8 operands, dequantize's int8
    // data; unique's and hash_join's int64 keys in, int64 out), and fp8_matmul (float8 operands,
    // gradients.cpp integer_op_reason): no reference owed.
    if (op == "quantize_per_tensor" || op == "dequantize" || op == "int8_matmul" || op == "unique" || op == "hash_join" ||
        op == "fp8_matmul")
      continue;
    std::vector<SchemaIssue> issues;
    auto schema = load_schema_file(std::string(GAUNTLET_SOURCE_DIR) + "/opschemas/" + op + ".json", &issues);
    ASSERT_TRUE(schema) << op;
    KernelManifest manifest;
    manifest.op = op;
    // Where the op is differentiable: a filter's threshold away from every element (a drawn one is
    // an element, where the output's length jumps), a sort's keys untied (ties are where its
    // permutation jumps).
    if (op == "filter") manifest.attrs["threshold"] = 0.1;
    for (InputSpec& in : schema->inputs) in.values.ties.clear();
    CaseSpace space(*schema, manifest);
    std::map<std::string, int64_t> dims;
    for (const auto& [name, dom] : schema->dims) dims[name] = std::max<int64_t>(space.limits_for(name).first, 3);
    AttrMap attrs;
    for (const AttrSpec& a : schema->attributes) attrs[a.name] = manifest.attrs.count(a.name) ? manifest.attrs[a.name] : a.default_value;
    Case c;
    std::string error;
    ASSERT_TRUE(space.build(dims, 0, attrs, DType::Float32, Distribution::Normal, 11, &c, &error)) << op << ": " << error;
    const std::vector<at::Tensor> in = materialize_all(c);
    const OracleResult fwd = run_oracle(schema->oracle, in, c.attrs);
    ASSERT_TRUE(fwd.ok()) << op << ": " << fwd.error;
    std::vector<at::Tensor> g;
    for (const at::Tensor& o : fwd.outputs) g.push_back(values(o.sizes().vec(), 0.9));
    GradientReference r = gradient_reference(schema->oracle, in, c.attrs, g);
    ASSERT_TRUE(r.ok()) << op << ": " << r.error;
    const bool loops = op == "relu" || op == "gelu" || op == "sigmoid" || op == "clamp";
    if (loops) EXPECT_EQ(r.method.rfind("finite differences", 0), 0u) << op << ": " << r.method;
    else EXPECT_EQ(r.method, "autograd") << op;
    EXPECT_EQ(r.grads.size(), in.size()) << op;
    const at::Tensor x = in[0].to(at::kDouble);
    if (op == "sigmoid")
      EXPECT_LT(max_rel_diff(r.grads[0], at::sigmoid(x) * (1 - at::sigmoid(x)) * g[0]), 1e-8);
    if (op == "relu") EXPECT_LT(max_rel_diff(r.grads[0], (x > 0).to(at::kDouble) * g[0]), 1e-8);
  }
}

TEST(GradientOracle, ToleranceIsTheReductionFormOfTheForwards) {
  Tolerance ulp;
  ulp.mode = "ulp";
  ulp.ulps = 4;
  Tolerance t = gradient_tolerance(ulp);
  EXPECT_EQ(t.mode, "reduction");
  EXPECT_EQ(t.ulps, 4);
  EXPECT_EQ(t.c, 8);
  Tolerance red;
  red.mode = "reduction";
  red.ulps = 2;
  red.c = 8;
  red.accumulator = "float32";
  t = gradient_tolerance(red);
  EXPECT_EQ(t.ulps, 2);
  EXPECT_EQ(t.c, 8);
  EXPECT_EQ(t.accumulator, "float32");
}

}  // namespace
