// Tests of the special-values gate: where special values go, drawn cases, runs on controls and planted bugs.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <fstream>
#include <set>

#include "gauntlet/build/builder.h"
#include "gauntlet/cases/gate.h"
#include "real_run.h"
#include "gauntlet/oracle/oracle.h"
#include "gauntlet/cases/property.h"

using namespace gauntlet;
using gauntlet::testing::CorpusKernelRun;
using gauntlet::testing::load_test_schema;

// gates/special_values.cpp has no header of its own (one file per gate): its testable pieces are
// declared here exactly as defined there. `where`: 0 first, 1 last, 2 random, 3 tile edge, 4 row,
// 5 line along `axis` (the values of its enum Where).
namespace gauntlet::special_values {
enum class Where : int64_t;
std::vector<int64_t> placement_indices(const std::vector<int64_t>& shape, Where where, int64_t axis, uint64_t a,
                                       uint64_t b, std::string* what);
Case draw_case(const CaseSpace& space);
std::vector<at::Tensor> with_nonfinite_replaced(const std::vector<at::Tensor>& inputs, double nan_value,
                                                double inf_magnitude, bool to_double);
at::Tensor strong_zero_reference(const at::Tensor& ref, const at::Tensor& got, const at::Tensor& small,
                                 const at::Tensor& nan_large, const at::Tensor& huge1, const at::Tensor& huge2,
                                 const at::Tensor& flipped, at::Tensor* accepted);
}  // namespace gauntlet::special_values

namespace {

using special_values::Where;
constexpr Where kFirst = Where(0), kLast = Where(1), kRandom = Where(2), kTileEdge = Where(3), kRow = Where(4),
                kLine = Where(5);

std::vector<int64_t> positions(const std::vector<int64_t>& shape, Where w, uint64_t a = 0, uint64_t b = 0,
                               int64_t axis = 0) {
  std::string what;
  auto v = special_values::placement_indices(shape, w, axis, a, b, &what);
  EXPECT_FALSE(what.empty());
  return v;
}

TEST(SpecialValuesPositions, FirstLastAndRandomElements) {
  const std::vector<int64_t> shape = {4, 300};
  EXPECT_EQ(positions(shape, kFirst), std::vector<int64_t>{0});
  EXPECT_EQ(positions(shape, kLast), std::vector<int64_t>{1199});
  EXPECT_EQ(positions(shape, kRandom, 1234), std::vector<int64_t>{1234 % 1200});
  EXPECT_EQ(positions({}, kLast), std::vector<int64_t>{0});  // a 0-d tensor has one element
  EXPECT_TRUE(special_values::placement_indices({3, 0}, kFirst, 0, 0, 0, nullptr).empty());
}

TEST(SpecialValuesPositions, RowsAreWholeSlicesAlongTheLastDim) {
  std::vector<int64_t> row = positions({4, 300}, kRow, 2);
  ASSERT_EQ(row.size(), 300u);
  for (size_t j = 0; j < row.size(); ++j) EXPECT_EQ(row[j], int64_t(600 + j));
  EXPECT_EQ(positions({4, 300}, kRow, 6), positions({4, 300}, kRow, 2));  // the row index wraps
  EXPECT_EQ(positions({5}, kRow, 3), (std::vector<int64_t>{0, 1, 2, 3, 4}));
}

TEST(SpecialValuesPositions, LinesRunAlongTheGivenAxis) {
  // [2,3,4] along dim 1: 8 lines of 3; line 5 is outer 1, inner 1.
  EXPECT_EQ(positions({2, 3, 4}, kLine, 5, 0, 1), (std::vector<int64_t>{13, 17, 21}));
  // Along dim 0 of [4, 300]: a column.
  EXPECT_EQ(positions({4, 300}, kLine, 7, 0, 0), (std::vector<int64_t>{7, 307, 607, 907}));
  // The reduced dim of a 1-D tensor is all of it.
  EXPECT_EQ(positions({3}, kLine, 0, 0, 0), (std::vector<int64_t>{0, 1, 2}));
}

TEST(SpecialValuesPositions, TileEdgesCoverEveryTileAndOffsetWhenTheTensorIsBigEnough) {
  const std::vector<int64_t> shape = {4, 300};
  std::set<int64_t> flat_positions, row_columns, rows;
  for (uint64_t a = 0; a < 60; ++a)
    for (uint64_t b = 0; b < 24; ++b) {
      const auto idx = positions(shape, kTileEdge, a, b);
      ASSERT_EQ(idx.size(), 1u);
      const bool along_row = (b / 3) % 2 == 1;
      if (along_row) {
        row_columns.insert(idx[0] % 300);
        rows.insert(idx[0] / 300);
      } else {
        flat_positions.insert(idx[0]);
      }
    }
  // Every tile size 8..128, one before, on and one after the edge, in flat order and along a row.
  for (int64_t T : {8, 16, 32, 64, 128})
    for (int64_t off : {-1, 0, 1}) {
      EXPECT_TRUE(flat_positions.count(T + off)) << "flat " << T << off;
      EXPECT_TRUE(row_columns.count(T + off)) << "row " << T << off;
    }
  EXPECT_EQ(rows.size(), 4u);
  // Nothing else: each position sits at k*T - 1, k*T or k*T + 1.
  for (int64_t p : flat_positions) {
    bool edge = false;
    for (int64_t T : {8, 16, 32, 64, 128}) edge |= (p + 1) % T <= 2 && p >= T - 1;
    EXPECT_TRUE(edge) << p;
  }
  // A tensor smaller than a tile: the tile shrinks to what fits, or the last element is the edge.
  for (uint64_t a = 0; a < 10; ++a) {
    const int64_t p = positions({100}, kTileEdge, a, 0)[0];
    EXPECT_TRUE((p + 1) % 8 == 0 && p < 100) << p;  // offset -1 of some tile that fits in 100
  }
  EXPECT_EQ(positions({5}, kTileEdge, 3, 1), std::vector<int64_t>{4});
}

// Cases drawn inside a RapidCheck property, as the gate draws them, collected without a kernel.
std::vector<Case> drawn_cases(const std::string& op, int n) {
  OpSchema schema = load_test_schema(op);
  KernelManifest manifest;
  CaseSpace space(schema, manifest);
  Launcher launcher{SandboxOptions{}};
  GateContext ctx{schema, manifest, space, launcher, "", std::string(64, 'b'), "", 3, 1, "", ""};
  std::vector<Case> cases;
  run_property(ctx, "special-values", n, [&] { return special_values::draw_case(space); }, [&](const Case& c) {
    cases.push_back(c);
    return GateVerdict{};
  });
  return cases;
}

TEST(SpecialValuesCases, EveryFloatingInputGetsEveryKindOfSpecialValue) {
  const std::vector<Case> cases = drawn_cases("layer_norm", 60);
  ASSERT_EQ(cases.size(), 60u);
  std::map<std::string, std::set<std::string>> kinds;  // input -> nan / +inf / -inf
  std::set<std::string> dtypes;
  bool whole_row = false;
  for (const Case& c : cases) {
    int64_t specials = 0;
    dtypes.insert(dtype_name(c.tensors[0].dtype));
    for (const TensorRecipe& r : c.tensors) {
      specials += int64_t(r.specials.size());
      for (const auto& [index, value] : r.specials) {
        int64_t n = 1;
        for (int64_t s : r.shape) n *= s;
        EXPECT_GE(index, 0);
        EXPECT_LT(index, n);
        kinds[r.name].insert(std::isnan(value) ? "nan" : value > 0 ? "+inf" : "-inf");
        ASSERT_FALSE(std::isfinite(value));
      }
      if (r.name == "x" && r.shape.back() >= 7 && int64_t(r.specials.size()) >= r.shape.back() &&
          c.label.find("row") != std::string::npos)
        whole_row = true;
    }
    EXPECT_GE(specials, 1) << c.label;
    EXPECT_NE(c.label.find("specials:"), std::string::npos);
  }
  const std::set<std::string> all = {"nan", "+inf", "-inf"};
  for (const char* input : {"x", "weight", "bias"}) EXPECT_EQ(kinds[input], all) << input;
  EXPECT_EQ(dtypes, (std::set<std::string>{"float32", "float16", "bfloat16"}));
  EXPECT_TRUE(whole_row);
}

TEST(SpecialValuesCases, ReductionsGetLinesAlongTheirReducedDimAndCasesRoundTrip) {
  const std::vector<Case> cases = drawn_cases("softmax", 60);
  bool line_along_reduced = false;
  for (const Case& c : cases) {
    const int64_t dim = std::get<int64_t>(c.attrs.at("dim"));
    const auto& shape = c.tensors[0].shape;
    const int64_t axis = dim < 0 ? dim + int64_t(shape.size()) : dim;
    if (c.label.find("line along dim " + std::to_string(axis)) != std::string::npos && shape[size_t(axis)] > 1)
      line_along_reduced = true;
    // Special values survive the replay file (JSON has no NaN or Inf: they are written as text).
    Case back;
    std::string error;
    ASSERT_TRUE(case_from_json(case_to_json(c), &back, &error)) << error;
    ASSERT_EQ(back.tensors[0].specials.size(), c.tensors[0].specials.size());
    for (size_t i = 0; i < c.tensors[0].specials.size(); ++i) {
      const double a = c.tensors[0].specials[i].second, b = back.tensors[0].specials[i].second;
      EXPECT_TRUE((std::isnan(a) && std::isnan(b)) || a == b);
    }
    EXPECT_EQ(inputs_digest(materialize_all(c)), inputs_digest(materialize_all(back)));
  }
  EXPECT_TRUE(line_along_reduced);
}

// An infinite k entry whose logit is -inf for every query gives that key weight exactly 0: the
// output stays finite, and so must the sdpa oracle's tolerance scale (an infinite scale would make
// the judge fall back to |y|, which a correct float32 kernel's rounding of P@V can exceed).
TEST(SpecialValuesOracle, SdpaScaleIgnoresKeysOfWeightZero) {
  at::Tensor q = at::rand({1, 1, 3, 4}, at::kDouble) + 0.5;  // every q entry positive
  at::Tensor k = at::randn({1, 1, 3, 4}, at::kDouble);
  at::Tensor v = at::randn({1, 1, 3, 4}, at::kDouble);
  k.index_put_({0, 0, 1, 2}, -INFINITY);  // q . k_1 = -inf for every query
  for (bool causal : {false, true}) {
    OracleResult r = run_oracle("sdpa", {q, k, v}, {{"causal", causal}});
    ASSERT_TRUE(r.ok()) << r.error;
    EXPECT_TRUE(at::isfinite(r.outputs[0]).all().item<bool>()) << causal;
    EXPECT_TRUE(at::isfinite(r.scales[0]).all().item<bool>()) << causal;
    EXPECT_TRUE((r.scales[0] > 0).all().item<bool>()) << causal;
  }
}

// A real gate run on a corpus kernel, in the sandbox.
struct RealRun : CorpusKernelRun {
  explicit RealRun(const std::string& rel_manifest, uint64_t seed = 5)
      : CorpusKernelRun(rel_manifest, seed, "special-values") {}
};

TEST(SpecialValuesGate, ControlsPass) {
  for (const char* control : {"controls/relu.json", "controls/logsumexp.json", "controls/layer_norm.json"}) {
    RealRun r(control);
    GateVerdict v = make_gate("special-values")->run(*r.ctx);
    EXPECT_EQ(v.status, Status::Pass) << control << ": " << v.message;
    EXPECT_EQ(v.cases, 30) << control;
    EXPECT_GT(v.evidence.value("nonfinite_expected", 0), 0) << control;
    EXPECT_GT(v.evidence.value("finite_expected", 0), 0) << control;
  }
}

// The planted bug fails, the failure is shrunk to a single special value in the smallest shape, and
// the replay file's case reproduces the verdict and the output bytes.
void expect_shrunk_to_one_special(const std::string& bug, const std::set<std::string>& kinds,
                                  int64_t max_elements) {
  RealRun r(bug);
  GateVerdict v = make_gate("special-values")->run(*r.ctx);
  ASSERT_EQ(v.status, Status::Fail) << v.message;
  EXPECT_EQ(v.category, Category::WrongResult);
  EXPECT_NE(v.message.find("NaN/Inf mismatch"), std::string::npos) << v.message;
  ASSERT_FALSE(v.replay.empty());
  std::ifstream in(v.replay);
  const nlohmann::json replay = nlohmann::json::parse(in);
  EXPECT_EQ(replay["gate"], "special-values");
  EXPECT_EQ(replay["outputs_sha256"], v.outputs_sha256);
  Case c;
  std::string error;
  ASSERT_TRUE(case_from_json(replay["case"], &c, &error)) << error;
  EXPECT_EQ(c.label, v.evidence.value("smallest_case", ""));
  ASSERT_EQ(c.tensors[0].specials.size(), 1u) << c.label;
  const double value = c.tensors[0].specials[0].second;
  EXPECT_TRUE(kinds.count(std::isnan(value) ? "nan" : value > 0 ? "+inf" : "-inf")) << c.label;
  int64_t n = 1;
  for (int64_t s : c.tensors[0].shape) n *= s;
  EXPECT_LE(n, max_elements) << "not shrunk: " << c.label;
  EXPECT_GT(v.evidence.value("shrink_steps", 0), 0);
  GateVerdict again = make_gate("special-values")->check_one(*r.ctx, c);
  EXPECT_EQ(again.status, Status::Fail) << again.message;
  EXPECT_EQ(again.outputs_sha256, v.outputs_sha256);
  // Without the special value the same case passes: the failure is the special value's.
  c.tensors[0].specials.clear();
  EXPECT_EQ(make_gate("special-values")->check_one(*r.ctx, c).status, Status::Pass);
}

TEST(SpecialValuesGate, ReluDroppingNaNShrinksToOneNaNInOneElement) {
  expect_shrunk_to_one_special("bugs/special-values/relu_nan_to_zero.json", {"nan"}, 1);
}

TEST(SpecialValuesGate, FmaxAmaxShrinksToOneNaN) {
  expect_shrunk_to_one_special("bugs/special-values/amax_fmax_drops_nan.json", {"nan"}, 1);
}

TEST(SpecialValuesGate, UnguardedLogsumexpShrinksToOneInfinity) {
  // A one-element slice holding +inf (inf - inf) or -inf (-inf - -inf) is the smallest failure.
  expect_shrunk_to_one_special("bugs/special-values/logsumexp_unguarded_max.json", {"+inf", "-inf"}, 1);
}

// What the gate computes: the reference on the inputs, and its four probes.
struct Strong {
  at::Tensor patched, accepted;
};
Strong strong_zero(const std::function<at::Tensor(const std::vector<at::Tensor>&)>& model,
                   const std::vector<at::Tensor>& inputs, const at::Tensor& got) {
  namespace sv = special_values;
  auto on = [&](const std::vector<at::Tensor>& in) { return model(in); };
  Strong out;
  const at::Tensor flipped = on(sv::with_nonfinite_replaced(inputs, 0.375, -std::ldexp(1.0, 200), true));
  out.patched = sv::strong_zero_reference(
      on(inputs), got, on(sv::with_nonfinite_replaced(inputs, 0.375, 0.375, false)),
      on(sv::with_nonfinite_replaced(inputs, 384.0, 0.375, false)),
      on(sv::with_nonfinite_replaced(inputs, 0.375, std::ldexp(1.0, 200), true)),
      on(sv::with_nonfinite_replaced(inputs, 0.375, std::ldexp(1.0, 300), true)), flipped, &out.accepted);
  return out;
}

// diag(a) @ b with a[0] = -inf and b[2][1] = NaN: the dense reference is NaN down all of column 1
// (0 x NaN). A kernel computing a[i] * b[i][j] gives -inf * b[0][1] in row 0 and finite values in
// row 1: what the reference gives with strong zeros, and accepted; the element the NaN really
// reaches ([2][1]) stays NaN. Two infinities multiplied (a[0] = -inf, b[0][0] = +inf) give -inf.
TEST(SpecialValuesJudging, ANanSpreadOnlyThroughExactZerosIsNotTheKernels) {
  at::Tensor a = at::tensor({2.0f, -3.0f, 5.0f});
  at::Tensor b = at::arange(9, at::kFloat).reshape({3, 3}) + 1;  // b[0][1] = 2, b[1][1] = 5
  a[0] = -INFINITY;
  b[2][1] = NAN;
  b[0][0] = INFINITY;
  auto dense = [](const std::vector<at::Tensor>& in) { return at::matmul(at::diag(in[0].to(at::kDouble)), in[1].to(at::kDouble)); };
  const at::Tensor skipping = a.unsqueeze(1) * b;
  const at::Tensor ref = dense({a, b});
  EXPECT_TRUE(at::isnan(ref.select(1, 1)).all().item<bool>());  // 0 x NaN down the column
  EXPECT_TRUE(at::isnan(ref[1][0]).item<bool>());                // 0 x inf
  const Strong s = strong_zero(dense, {a, b}, skipping);
  EXPECT_EQ(s.patched[0][1].item<double>(), -INFINITY);  // -inf * 2
  EXPECT_EQ(s.patched[1][1].item<double>(), -15.0);      // -3 * 5
  EXPECT_EQ(s.patched[0][0].item<double>(), -INFINITY);  // -inf * +inf
  EXPECT_EQ(s.patched[1][0].item<double>(), -12.0);      // -3 * 4
  EXPECT_TRUE(at::isnan(s.patched[2][1]).item<bool>());
  EXPECT_FALSE(s.accepted[2][1].item<bool>());
  EXPECT_TRUE(at::equal(at::isnan(s.patched), at::isnan(skipping)));
  EXPECT_TRUE(at::allclose(at::nan_to_num(s.patched.to(at::kFloat)), at::nan_to_num(skipping)));

  // A lower-triangular l times a column of +inf: row i of the reference adds l[i][k] * inf for
  // k <= i and 0 * inf past it (NaN); a triangular kernel's sum is +-inf when l[i][0..i] share a
  // sign, and NaN when they do not (inf - inf), which strong zeros give too.
  const at::Tensor l = at::tensor({1.0f, 0.0f, 0.0f, 2.0f, 3.0f, 0.0f, -1.0f, 2.0f, 4.0f}).reshape({3, 3});
  at::Tensor column = at::ones({3, 2});
  column.select(1, 0).fill_(INFINITY);
  auto tri = [](const std::vector<at::Tensor>& in) { return at::matmul(in[0].to(at::kDouble), in[1].to(at::kDouble)); };
  at::Tensor kernel = at::zeros({3, 2});
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 2; ++j) {
      float acc = 0;
      for (int64_t k = 0; k <= i; ++k) acc += l[i][k].item<float>() * column[k][j].item<float>();
      kernel[i][j] = acc;
    }
  const Strong t = strong_zero(tri, {l, column}, kernel);
  EXPECT_EQ(t.patched[0][0].item<double>(), INFINITY);
  EXPECT_EQ(t.patched[1][0].item<double>(), INFINITY);
  EXPECT_TRUE(at::isnan(kernel[2][0]).item<bool>());
  EXPECT_FALSE(t.accepted[2][0].item<bool>());

  // Infinities from both inputs reaching one output (a column of +inf in A, an element of -inf
  // and a row of +inf in B, all kept by the lower-triangular structure): wherever the kernel that
  // skips the structural zeros is not NaN, strong zeros give exactly its value.
  const int64_t n = 5;
  at::Tensor A = at::tril(at::arange(1, n * n + 1, at::kFloat).reshape({n, n}).remainder(7) - 3);
  at::Tensor B = at::tril(at::arange(2, n * n + 2, at::kFloat).reshape({n, n}).remainder(5) - 2);
  A.select(1, 1).slice(0, 1).fill_(INFINITY);
  B[0][0] = -INFINITY;
  B.select(0, 3).slice(0, 0, 4).fill_(INFINITY);
  at::Tensor tri_kernel = at::zeros({n, n});
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j <= i; ++j) {
      float acc = 0;
      for (int64_t k = j; k <= i; ++k) acc += A[i][k].item<float>() * B[k][j].item<float>();
      tri_kernel[i][j] = acc;
    }
  const Strong both = strong_zero(tri, {A, B}, tri_kernel);
  EXPECT_GT(both.accepted.sum().item<int64_t>(), 0);
  EXPECT_TRUE(at::equal(at::isnan(both.patched), at::isnan(tri_kernel))) << both.patched << tri_kernel;
  EXPECT_TRUE(at::equal(at::isinf(both.patched), at::isinf(tri_kernel))) << both.patched << tri_kernel;

  // relu(NaN) returned as 0 (fmaxf), clamp(NaN) as 1, a row max or a sum dropping NaN: the NaN's
  // own value reaches those outputs, so the reference's NaN stays and the kernel fails.
  const at::Tensor x = at::tensor({NAN, 2.0f, -1.0f});
  auto relu = [](const std::vector<at::Tensor>& in) { return at::relu(in[0].to(at::kDouble)); };
  EXPECT_FALSE(strong_zero(relu, {x}, at::tensor({0.0f, 2.0f, 0.0f})).accepted.any().item<bool>());
  auto clamp = [](const std::vector<at::Tensor>& in) { return at::clamp(in[0].to(at::kDouble), -1, 1); };
  EXPECT_FALSE(strong_zero(clamp, {x}, at::tensor({1.0f, 1.0f, -1.0f})).accepted.any().item<bool>());
  auto amax = [](const std::vector<at::Tensor>& in) { return in[0].to(at::kDouble).amax(0, true); };
  EXPECT_FALSE(strong_zero(amax, {x}, at::tensor({2.0f})).accepted.any().item<bool>());
  auto sum = [](const std::vector<at::Tensor>& in) { return in[0].to(at::kDouble).sum(0, true); };
  EXPECT_FALSE(strong_zero(sum, {x}, at::tensor({1.0f})).accepted.any().item<bool>());
  // An infinity that only a ratio sees (softmax of a row holding +inf: NaN, a kernel's 1 there)
  // is not driven by the infinity's size: the probes do not grow, the NaN stays.
  const at::Tensor y = at::tensor({INFINITY, 1.0f, 2.0f});
  auto softmax = [](const std::vector<at::Tensor>& in) { return at::softmax(in[0].to(at::kDouble), 0); };
  EXPECT_FALSE(strong_zero(softmax, {y}, at::tensor({1.0f, 0.0f, 0.0f})).accepted.any().item<bool>());
  // cross_entropy of a row holding +inf: PyTorch's NaN (inf - inf inside log_softmax) stays the
  // answer; +inf, the limit, grows with the probes but does not flip with them.
  auto xent = [](const std::vector<at::Tensor>& in) {
    return at::cross_entropy_loss(in[0].to(at::kDouble), at::tensor({int64_t(1), int64_t(0)})).reshape({1});
  };
  const at::Tensor logits = at::tensor({INFINITY, 1.0f, 0.5f, 2.0f}).reshape({2, 2});
  EXPECT_TRUE(at::isnan(xent({logits})).all().item<bool>());
  EXPECT_FALSE(strong_zero(xent, {logits}, at::tensor({INFINITY})).accepted.any().item<bool>());

  // Without infinities the gate passes the small probe as the three huge ones (they would be the
  // same): a NaN spread through a zero is still told from a NaN the output depends on.
  {
    at::Tensor bn = b.clone();
    bn[0][0] = 1.0f;
    const at::Tensor aa = a.clone().fill_(2.0f);
    const at::Tensor ref_nan = dense({aa, bn});
    const at::Tensor kernel_nan = aa.unsqueeze(1) * bn;
    const at::Tensor small = dense(special_values::with_nonfinite_replaced({aa, bn}, 0.375, 0.375, false));
    const at::Tensor large = dense(special_values::with_nonfinite_replaced({aa, bn}, 384.0, 0.375, false));
    at::Tensor accepted;
    const at::Tensor patched =
        special_values::strong_zero_reference(ref_nan, kernel_nan, small, large, small, small, small, &accepted);
    EXPECT_TRUE(at::equal(at::isnan(patched), at::isnan(kernel_nan)));
    EXPECT_EQ(accepted.sum().item<int64_t>(), 2);  // column 1, rows 0 and 1
  }
  // The probes' inputs: NaNs and infinities replaced, finite values kept, integers untouched.
  const auto probes = special_values::with_nonfinite_replaced({at::tensor({NAN, -INFINITY, 1.5f}), at::tensor({int64_t(3)})},
                                                              384.0, 0.375, false);
  EXPECT_TRUE(at::equal(probes[0], at::tensor({384.0f, -0.375f, 1.5f})));
  EXPECT_EQ(probes[1].scalar_type(), at::kLong);
  EXPECT_EQ(special_values::with_nonfinite_replaced({y}, 0.375, std::ldexp(1.0, 200), true)[0][0].item<double>(),
            std::ldexp(1.0, 200));
  EXPECT_EQ(special_values::with_nonfinite_replaced({y}, 0.375, -std::ldexp(1.0, 200), true)[0][0].item<double>(),
            -std::ldexp(1.0, 200));
}

}  // namespace
