// Tests of the named wrong-output patterns (src/parent/diagnosis.cpp): each pattern names the bug it
// describes, and neither a right output nor a bug of another kind is given its name.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "gauntlet/diagnosis.h"
#include "gauntlet/oracle.h"
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
