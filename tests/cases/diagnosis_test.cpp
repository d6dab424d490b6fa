// Tests of the named wrong-output patterns (src/cases/diagnosis.cpp): each pattern names the bug it
// describes, and neither a right output nor a bug of another kind is given its name.
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "gauntlet/cases/diagnosis.h"
#include "gauntlet/oracle/oracle.h"
#include "../gates/real_run.h"

using namespace gauntlet;
using gauntlet::testing::load_test_schema;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Case case_of(const std::vector<at::Tensor>& inputs, AttrMap attrs = {}) {
  Case c;
  for (size_t i = 0; i < inputs.size(); ++i) {
    TensorRecipe r;
    r.name = "in" + std::to_string(i);
    r.shape = inputs[i].sizes().vec();
    c.tensors.push_back(r);
  }
  c.attrs = attrs;
  return c;
}

std::string name_of(const std::optional<Diagnosis>& d) { return d ? d->name : "(none)"; }

at::Tensor exact(const std::string& op, const std::vector<at::Tensor>& inputs, const AttrMap& attrs = {}) {
  const OracleResult r = run_oracle(op, inputs, attrs);
  EXPECT_TRUE(r.ok()) << r.error;
  return r.outputs.at(0);
}

}  // namespace

TEST(Diagnosis, GeluTanhFormIsNamedAndTheErfFormIsNot) {
  const OpSchema s = load_test_schema("gelu");
  const at::Tensor x = at::linspace(-4, 4, 257, at::kFloat);
  const at::Tensor want = exact("gelu", {x});
  const at::Tensor d = x.to(at::kDouble);
  const at::Tensor tanh_form = (0.5 * d * (1 + at::tanh(std::sqrt(2.0 / M_PI) * (d + 0.044715 * d * d * d)))).to(at::kFloat);
  auto diag = diagnose_wrong_output(s, case_of({x}), {x}, {tanh_form}, {want});
  EXPECT_EQ(name_of(diag), "gelu-tanh");
  EXPECT_NE(diag->text.find("approximate=\"tanh\""), std::string::npos) << diag->text;
  EXPECT_EQ(name_of(diagnose_wrong_output(s, case_of({x}), {x}, {want.to(at::kFloat)}, {want})), "(none)");
  // Wrong in another way (a constant offset): not the tanh form.
  EXPECT_EQ(name_of(diagnose_wrong_output(s, case_of({x}), {x}, {(want + 1e-3).to(at::kFloat)}, {want})), "(none)");
}

TEST(Diagnosis, SoftmaxWithoutItsMaxIsNamed) {
  const OpSchema s = load_test_schema("softmax");
  const at::Tensor x = at::tensor({1.0f, 2.0f, 95.0f, 3.0f, 0.5f, -1.0f, 2.0f, 4.0f}).reshape({2, 4});
  const AttrMap attrs{{"dim", int64_t(-1)}};
  const at::Tensor want = exact("softmax", {x}, attrs);
  const at::Tensor naive = at::exp(x) / at::exp(x).sum(-1, true);  // row 0 overflows: NaN, 0, ...
  EXPECT_EQ(name_of(diagnose_wrong_output(s, case_of({x}, attrs), {x}, {naive}, {want})), "softmax-without-max");
  EXPECT_EQ(name_of(diagnose_wrong_output(s, case_of({x}, attrs), {x}, {want.to(at::kFloat)}, {want})), "(none)");
}

TEST(Diagnosis, NanDroppedOnlyWhereANanInputWasDropped) {
  const OpSchema s = load_test_schema("relu");
  const at::Tensor x = at::tensor({-1.0f, 2.0f, float(kNaN), 0.5f});
  const at::Tensor want = exact("relu", {x});
  const at::Tensor fmax_form = at::tensor({0.0f, 2.0f, 0.0f, 0.5f});
  auto diag = diagnose_wrong_output(s, case_of({x}), {x}, {fmax_form}, {want});
  EXPECT_EQ(name_of(diag), "nan-dropped");
  EXPECT_NE(diag->text.find("y[2] = 0"), std::string::npos) << diag->text;
  // Also wrong elsewhere: another bug, not this one.
  EXPECT_EQ(name_of(diagnose_wrong_output(s, case_of({x}), {x}, {at::tensor({0.0f, 3.0f, 0.0f, 0.5f})}, {want})), "(none)");
  // A NaN result from an infinity (no NaN input) returned as +inf is not a dropped NaN input.
  const at::Tensor inf_x = at::tensor({1.0f, float(INFINITY)});
  EXPECT_EQ(name_of(diagnose_wrong_output(s, case_of({inf_x}), {inf_x}, {at::tensor({1.0f, float(INFINITY)})},
                                          {at::tensor({1.0, kNaN}, at::kDouble)})),
            "(none)");
}

TEST(Diagnosis, FlushToZeroOnlyForSubnormalResults) {
  const OpSchema s = load_test_schema("relu");
  const float sub = 1e-40f;  // subnormal in float32
  const at::Tensor x = at::tensor({sub, 2.0f, -sub, 1e-30f});
  const at::Tensor want = exact("relu", {x});
  EXPECT_EQ(name_of(diagnose_wrong_output(s, case_of({x}), {x}, {at::tensor({0.0f, 2.0f, 0.0f, 1e-30f})}, {want})),
            "flush-to-zero");
  // A normal result returned as 0 is a gross error, not a flush.
  EXPECT_EQ(name_of(diagnose_wrong_output(s, case_of({x}), {x}, {at::tensor({0.0f, 2.0f, 0.0f, 0.0f})}, {want})), "(none)");
}

TEST(Diagnosis, SubnormalInputsReadAsZeroAreNamed) {
  // a [2,2] with one subnormal, b near float32's max: that product is of order 1.
  const OpSchema s = load_test_schema("matmul");
  const float sub = std::ldexp(1.0f, -140);
  const at::Tensor a = at::tensor({sub, 1.0f, 2.0f, 3.0f}).reshape({2, 2});
  const at::Tensor b = at::tensor({std::ldexp(1.0f, 126), 1.0f, 1.0f, 0.5f}).reshape({2, 2});
  const at::Tensor want = exact("matmul", {a, b});
  const at::Tensor daz = at::matmul(at::tensor({0.0f, 1.0f, 2.0f, 3.0f}).reshape({2, 2}), b);
  EXPECT_EQ(name_of(diagnose_wrong_output(s, case_of({a, b}), {a, b}, {daz}, {want})), "subnormal-inputs-as-zero");
  // Wrong elsewhere too (y[1,1] off): not this pattern.
  at::Tensor other = daz.clone();
  other[1][1] = 100.0f;
  EXPECT_EQ(name_of(diagnose_wrong_output(s, case_of({a, b}), {a, b}, {other}, {want})), "(none)");
  // No subnormal input: never named, whatever the output.
  const at::Tensor n = at::tensor({1.0f, 1.0f, 2.0f, 3.0f}).reshape({2, 2});
  EXPECT_EQ(name_of(diagnose_wrong_output(s, case_of({n, b}), {n, b}, {daz}, {exact("matmul", {n, b})})), "(none)");
}

TEST(Diagnosis, AViewReadAsContiguousStorageIsNamed) {
  const OpSchema s = load_test_schema("relu");
  const at::Tensor base = at::arange(12, at::kFloat).reshape({3, 4}) - 5;
  const at::Tensor view = base.t();  // [4, 3], transposed
  Case c = case_of({view});
  c.tensors[0].layout = "transposed";
  const at::Tensor want = exact("relu", {view});
  const at::Tensor storage_read = at::relu(base.reshape({-1})).reshape({4, 3});  // row-major over the storage
  auto diag = diagnose_wrong_output(s, c, {view}, {storage_read}, {want});
  EXPECT_EQ(name_of(diag), "contiguous-read");
  EXPECT_NE(diag->text.find("in0 transposed"), std::string::npos) << diag->text;
  // The same wrong bytes for a contiguous input: nothing to read differently, no such diagnosis.
  Case contiguous = case_of({view.contiguous()});
  EXPECT_EQ(name_of(diagnose_wrong_output(s, contiguous, {view.contiguous()}, {storage_read}, {want})), "(none)");
}

// A triangular kernel handed a transposed upper-triangular b: it reads the storage row-major and
// keeps only the upper triangle of what it reads (the rest is promised zero), so the output is the
// op on the storage projected onto the structure; a dense storage read does not explain it.
TEST(Diagnosis, AStructuredViewReadAsContiguousIsNamed) {
  const OpSchema s = load_test_schema("matmul");
  const at::Tensor a = at::triu(at::arange(16, at::kFloat).reshape({4, 4}).remainder(5) - 2);
  const at::Tensor stored = at::triu(at::arange(16, at::kFloat).reshape({4, 4}).remainder(7) - 3);
  const at::Tensor b = stored.t().contiguous().t();  // upper-triangular values, transposed layout
  Case c = case_of({a, b});
  c.tensors[0].structure = c.tensors[1].structure = "upper-triangular";
  c.tensors[1].layout = "transposed";
  const at::Tensor want = exact("matmul", {a, b});
  const at::Tensor storage_rows = b.t().contiguous().reshape({4, 4});  // row-major over b's storage
  const at::Tensor got = at::matmul(a, at::triu(storage_rows));
  auto d = diagnose_wrong_output(s, c, {a, b}, {got}, {want});
  EXPECT_EQ(name_of(d), "contiguous-read");
  EXPECT_NE(d->text.find("promised structure"), std::string::npos) << d->text;
  // Without the structure in the case, the same output has no name (a dense read gives a@storage).
  Case dense = c;
  dense.tensors[0].structure = dense.tensors[1].structure = "";
  EXPECT_EQ(name_of(diagnose_wrong_output(s, dense, {a, b}, {got}, {want})), "(none)");
}

// A reduction over a transposed view read row-major (the 2-D softmax that indexes data_ptr).
TEST(Diagnosis, AReductionOverAViewReadAsContiguousIsNamed) {
  const OpSchema s = load_test_schema("softmax");
  const at::Tensor storage = at::tensor({0.1725f, -1.0549f, -0.3138f, 0.1791f});
  const at::Tensor view = storage.as_strided({2, 2}, {1, 2}, 0);
  const AttrMap attrs{{"dim", int64_t(-1)}};
  Case c = case_of({view}, attrs);
  c.tensors[0].layout = "transposed";
  const at::Tensor want = exact("softmax", {view}, attrs);
  const at::Tensor got = at::softmax(storage.reshape({2, 2}).to(at::kDouble), -1).to(at::kFloat);
  EXPECT_EQ(name_of(diagnose_wrong_output(s, c, {view}, {got}, {want})), "contiguous-read");
  // Its output allocated with empty_like(x) (the view's strides) and written row-major as well.
  const at::Tensor through = got.reshape({-1}).as_strided({2, 2}, {1, 2}, 0);
  auto d = diagnose_wrong_output(s, c, {view}, {through}, {want});
  EXPECT_EQ(name_of(d), "contiguous-read");
  EXPECT_NE(d->text.find("empty_like"), std::string::npos) << d->text;
}

namespace {

// What a matmul kernel with a scalar_t accumulator returns (`acc += a[i][k] * b[k][j]` in the
// 16-bit type's own arithmetic: each product and each running sum rounded to it), or, with
// `T = float`, a float32 accumulator rounded once to the inputs' dtype.
template <typename T>
at::Tensor matmul_accumulating_in(const at::Tensor& a, const at::Tensor& b) {
  const at::Tensor af = a.to(at::kFloat).contiguous(), bf = b.to(at::kFloat).contiguous();
  const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
  at::Tensor out = at::empty({M, N}, at::kFloat);
  const float* pa = af.data_ptr<float>();
  const float* pb = bf.data_ptr<float>();
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      T acc = T(0);
      for (int64_t k = 0; k < K; ++k) acc += T(pa[i * K + k]) * T(pb[k * N + j]);
      out.data_ptr<float>()[i * N + j] = float(acc);
    }
  return out.to(a.scalar_type());
}

// sum(x, 0) of a [K, C] x with a scalar_t running sum per column.
template <typename T>
at::Tensor column_sums_accumulating_in(const at::Tensor& x) {
  const at::Tensor xf = x.to(at::kFloat).contiguous();
  const int64_t K = x.size(0), C = x.size(1);
  at::Tensor out = at::empty({C}, at::kFloat);
  for (int64_t j = 0; j < C; ++j) {
    T acc = T(0);
    for (int64_t k = 0; k < K; ++k) acc += T(xf.data_ptr<float>()[k * C + j]);
    out.data_ptr<float>()[j] = float(acc);
  }
  return out.to(x.scalar_type());
}

// The accumulation gate's dot-product data: integers in [-7, 16] times integers in [0, 3], so a
// float32 accumulator is exact and a float16 one rounds once its sums pass 2048.
std::pair<at::Tensor, at::Tensor> integer_operands(int64_t M, int64_t K, int64_t N, at::ScalarType dtype) {
  at::Generator gen = at::detail::createCPUGenerator(7);
  return {at::randint(-7, 17, {M, K}, gen, at::kFloat).to(dtype), at::randint(0, 4, {K, N}, gen, at::kFloat).to(dtype)};
}

}  // namespace

TEST(Diagnosis, HalfAccumulationInAMatmulIsNamed) {
  const OpSchema s = load_test_schema("matmul");
  const auto [a, b] = integer_operands(8, 2048, 8, at::kHalf);
  const at::Tensor want = exact("matmul", {a, b});
  const at::Tensor half_acc = matmul_accumulating_in<at::Half>(a, b);
  auto d = diagnose_wrong_output(s, case_of({a, b}), {a, b}, {half_acc}, {want});
  ASSERT_EQ(name_of(d), "half-accumulation");
  EXPECT_NE(d->text.find("float16 running sum of its 2048 products in order"), std::string::npos) << d->text;
  // bfloat16, random normal operands: the running sum stalls far sooner.
  at::Generator gen = at::detail::createCPUGenerator(3);
  const at::Tensor x = at::randn({8, 1024}, gen, at::kFloat).to(at::kBFloat16);
  const at::Tensor w = at::randn({1024, 8}, gen, at::kFloat).to(at::kBFloat16);
  EXPECT_EQ(name_of(diagnose_wrong_output(s, case_of({x, w}), {x, w}, {matmul_accumulating_in<at::BFloat16>(x, w)},
                                          {exact("matmul", {x, w})})),
            "half-accumulation");
}

TEST(Diagnosis, HalfAccumulationInASumAlongDimZeroIsNamed) {
  const OpSchema s = load_test_schema("sum");
  at::Generator gen = at::detail::createCPUGenerator(11);
  const at::Tensor x = at::randn({4096, 32}, gen, at::kFloat).to(at::kBFloat16);
  const AttrMap attrs{{"dim", int64_t(0)}};
  const at::Tensor want = exact("sum", {x}, attrs);
  auto d = diagnose_wrong_output(s, case_of({x}, attrs), {x}, {column_sums_accumulating_in<at::BFloat16>(x)}, {want});
  ASSERT_EQ(name_of(d), "half-accumulation");
  EXPECT_NE(d->text.find("bfloat16 running sum of its 4096 terms in order"), std::string::npos) << d->text;
  // A float32 accumulator, and the 16-bit sums of the columns in reverse order (another bug: each
  // output is a different column's sum).
  EXPECT_EQ(name_of(diagnose_wrong_output(s, case_of({x}, attrs), {x}, {column_sums_accumulating_in<float>(x)}, {want})),
            "(none)");
  EXPECT_EQ(name_of(diagnose_wrong_output(s, case_of({x}, attrs), {x},
                                          {column_sums_accumulating_in<at::BFloat16>(x).flip(0)}, {want})),
            "(none)");
}

// mean(x, -1) as a float16 running sum divided by K in float16 (c10::Half / int64_t).
TEST(Diagnosis, HalfAccumulationInAMeanIsNamed) {
  const OpSchema s = load_test_schema("mean");
  at::Generator gen = at::detail::createCPUGenerator(5);
  const at::Tensor x = at::randint(-7, 17, {32, 4096}, gen, at::kFloat).to(at::kHalf);
  const AttrMap attrs{{"dim", int64_t(-1)}};
  const at::Tensor want = exact("mean", {x}, attrs);
  const at::Tensor xt = x.t().contiguous();  // [4096, 32]: rows summed as columns
  const at::Tensor sums = column_sums_accumulating_in<at::Half>(xt).to(at::kFloat);
  at::Tensor half_mean = at::empty({32}, at::kHalf);
  for (int64_t i = 0; i < 32; ++i) half_mean[i] = float(at::Half(sums[i].item<float>()) / int64_t(4096));
  auto d = diagnose_wrong_output(s, case_of({x}, attrs), {x}, {half_mean}, {want});
  ASSERT_EQ(name_of(d), "half-accumulation");
  EXPECT_NE(d->text.find("divided by 4096"), std::string::npos) << d->text;
  EXPECT_EQ(name_of(diagnose_wrong_output(s, case_of({x}, attrs), {x}, {want.to(at::kHalf)}, {want})), "(none)");
}

// A correct float32 accumulator, a single wrong element, gross errors (zeros, a row off by one, a
// wrong index) and float32 inputs are not a 16-bit accumulation.
TEST(Diagnosis, HalfAccumulationIsNotNamedForOtherOutputs) {
  const OpSchema s = load_test_schema("matmul");
  const auto [a, b] = integer_operands(8, 2048, 8, at::kHalf);
  const Case c = case_of({a, b});
  const at::Tensor want = exact("matmul", {a, b});
  auto named = [&](const at::Tensor& got) { return name_of(diagnose_wrong_output(s, c, {a, b}, {got}, {want})); };
  const at::Tensor right = matmul_accumulating_in<float>(a, b);
  EXPECT_EQ(named(right), "(none)");
  at::Tensor one_wrong = right.clone();
  one_wrong[3][5] = one_wrong[3][5].item<float>() + 64;
  EXPECT_EQ(named(one_wrong), "(none)");
  EXPECT_EQ(named(at::zeros_like(right)), "(none)");
  EXPECT_EQ(named(at::roll(right, 1, 0)), "(none)");  // every row one off
  EXPECT_EQ(named(right.t().contiguous()), "(none)");  // [j][i]: a wrong index
  // The 16-bit accumulation itself, but one row off or one element gross: wrong in another way too.
  const at::Tensor half_acc = matmul_accumulating_in<at::Half>(a, b);
  EXPECT_EQ(named(half_acc), "half-accumulation");
  EXPECT_EQ(named(at::roll(half_acc, 1, 0)), "(none)");
  at::Tensor half_acc_one_gross = half_acc.clone();
  half_acc_one_gross[3][5] = half_acc_one_gross[3][5].item<float>() + 1024;
  EXPECT_EQ(named(half_acc_one_gross), "(none)");
  // float32 inputs with the float16 accumulator's very values: no 16-bit dtype to accumulate in.
  const at::Tensor a32 = a.to(at::kFloat), b32 = b.to(at::kFloat);
  EXPECT_EQ(name_of(diagnose_wrong_output(s, case_of({a32, b32}), {a32, b32}, {half_acc.to(at::kFloat)},
                                          {exact("matmul", {a32, b32})})),
            "(none)");
}
