// Tests of the statelessness gate: the A/B/A sequence it plans, which ops have a batch dim, and real runs on controls and planted bugs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "gauntlet/build/builder.h"
#include "gauntlet/cases/gate.h"
#include "real_run.h"

using namespace gauntlet;
using gauntlet::testing::CorpusKernelRun;
using gauntlet::testing::load_test_schema;

// gates/statelessness.cpp has no header of its own (one file per gate): its testable pieces are
// declared here exactly as defined there.
namespace gauntlet::statelessness_gate {
struct Step {
  std::string what;
  Case c;
  bool is_a = false;
};
std::vector<Step> plan_sequence(const CaseSpace& space, const Case& a);
std::vector<bool> batch_inputs(const OpSchema& schema, const Case& c, size_t alt, std::string* why);
}  // namespace gauntlet::statelessness_gate

namespace {

namespace sg = gauntlet::statelessness_gate;

Case build_case(const CaseSpace& space, const std::map<std::string, int64_t>& dims, size_t alt, AttrMap attrs) {
  Case c;
  std::string why;
  EXPECT_TRUE(space.build(dims, alt, attrs, DType::Float32, Distribution::Normal, 3, &c, &why)) << why;
  return c;
}

int64_t numel(const TensorRecipe& r) {
  int64_t n = 1;
  for (int64_t s : r.shape) n *= s;
  return n;
}

TEST(StatelessnessPlan, BsDifferInValuesAttributesAndShapeAndAReturnsBetweenThem) {
  OpSchema s = load_test_schema("softmax");
  KernelManifest m;
  CaseSpace space(s, m);
  const Case a = build_case(space, {{"B", 1}, {"M", 5}, {"N", 7}}, 0, {{"dim", int64_t(-1)}});
  const auto steps = sg::plan_sequence(space, a);
  ASSERT_EQ(steps.size(), 7u);
  for (size_t k = 0; k < steps.size(); ++k) EXPECT_EQ(steps[k].is_a, k % 2 == 0) << steps[k].what;
  // B1: same shape and attributes, other values.
  EXPECT_EQ(steps[1].c.tensors[0].shape, a.tensors[0].shape);
  EXPECT_EQ(steps[1].c.attrs, a.attrs);
  EXPECT_NE(steps[1].c.tensors[0].seed, a.tensors[0].seed);
  // B2: another reduced dim.
  EXPECT_EQ(steps[3].c.tensors[0].shape, a.tensors[0].shape);
  EXPECT_NE(steps[3].c.attrs, a.attrs);
  EXPECT_NE(steps[3].what.find("dim=0"), std::string::npos) << steps[3].what;
  // B3: M and N swapped, so a cache keyed by the element count alone is stale.
  EXPECT_EQ(steps[5].c.tensors[0].shape, (std::vector<int64_t>{7, 5}));
  EXPECT_EQ(numel(steps[5].c.tensors[0]), numel(a.tensors[0]));
  // Every A is the case itself.
  for (size_t k = 0; k < steps.size(); k += 2) EXPECT_EQ(case_to_json(steps[k].c), case_to_json(a));
}

TEST(StatelessnessPlan, DoubleAttributesMoveInsideTheirConstraints) {
  OpSchema s = load_test_schema("clamp");
  KernelManifest m;
  CaseSpace space(s, m);
  const Case a = build_case(space, {{"B", 1}, {"M", 1}, {"N", 4}}, 0, {{"lo", -0.5}, {"hi", 0.5}});
  const auto steps = sg::plan_sequence(space, a);
  const sg::Step* attrs = nullptr;
  for (const auto& st : steps)
    if (!st.is_a && st.c.attrs != a.attrs) attrs = &st;
  ASSERT_NE(attrs, nullptr);
  const double lo = std::get<double>(attrs->c.attrs.at("lo")), hi = std::get<double>(attrs->c.attrs.at("hi"));
  EXPECT_NE(lo, -0.5);
  EXPECT_NE(hi, 0.5);
  EXPECT_LE(lo, hi);
  // A manifest that fixes an attribute keeps it fixed in every call.
  KernelManifest fixed;
  fixed.attrs["lo"] = -0.5;
  CaseSpace fixed_space(s, fixed);
  for (const auto& st : sg::plan_sequence(fixed_space, a)) EXPECT_EQ(std::get<double>(st.c.attrs.at("lo")), -0.5) << st.what;
}

std::vector<bool> batch_of(const std::string& op, const std::map<std::string, int64_t>& dims, size_t alt, AttrMap attrs,
                           std::string* why) {
  OpSchema s = load_test_schema(op);
  KernelManifest m;
  CaseSpace space(s, m);
  return sg::batch_inputs(s, build_case(space, dims, alt, attrs), alt, why);
}

TEST(StatelessnessBatch, TheLeadingDimIsABatchOnlyWhereTheOpMapsItRowByRow) {
  std::string why;
  using V = std::vector<bool>;
  EXPECT_EQ(batch_of("softmax", {{"B", 2}, {"M", 3}, {"N", 4}}, 0, {{"dim", int64_t(-1)}}, &why), V({true})) << why;
  EXPECT_EQ(batch_of("softmax", {{"B", 2}, {"M", 3}, {"N", 4}}, 0, {{"dim", int64_t(0)}}, &why), V{});
  EXPECT_NE(why.find("reduces over the leading dim"), std::string::npos) << why;
  EXPECT_EQ(batch_of("sum", {{"B", 2}, {"M", 3}, {"N", 4}}, 1, {{"dim", int64_t(-2)}}, &why), V({true})) << why;
  EXPECT_EQ(batch_of("layer_norm", {{"B", 2}, {"S", 3}, {"M", 3}, {"D", 4}}, 0, {{"eps", 1e-5}}, &why),
            V({true, false, false}))
      << why;
  EXPECT_EQ(batch_of("matmul", {{"M", 3}, {"K", 4}, {"N", 5}}, 0, {}, &why), V({true, false})) << why;
  EXPECT_EQ(batch_of("bmm", {{"B", 2}, {"M", 3}, {"K", 4}, {"N", 5}}, 0, {}, &why), V({true, true})) << why;
  EXPECT_EQ(batch_of("sdpa", {{"B", 2}, {"H", 1}, {"S", 3}, {"D", 8}}, 0, {{"causal", true}}, &why), V({true, true, true}))
      << why;
  EXPECT_EQ(batch_of("conv2d", {{"N", 2}, {"C", 1}, {"H", 5}, {"W", 5}, {"O", 2}, {"KH", 3}, {"KW", 3}}, 0,
                     {{"stride", int64_t(1)}, {"padding", int64_t(0)}}, &why),
            V({true, false, false}))
      << why;
  // add: b broadcast along the rows stays whole; a b with its own rows is sliced with a.
  EXPECT_EQ(batch_of("add", {{"B", 1}, {"M", 3}, {"N", 4}}, 0, {}, &why), V({true, true})) << why;
  // Reductions over the batch and gathers: no batch property.
  EXPECT_EQ(batch_of("cross_entropy", {{"N", 3}, {"C", 4}}, 0, {}, &why), V{});
  EXPECT_NE(why.find("reduces over N"), std::string::npos) << why;
  EXPECT_EQ(batch_of("embedding", {{"V", 5}, {"D", 3}, {"N", 4}}, 0, {}, &why), V{});
  // A sort's outputs are [N] like its inputs, but each position depends on every key: no batch.
  EXPECT_EQ(batch_of("sort", {{"N", 6}}, 0, {}, &why), V{});
  EXPECT_NE(why.find("coupled_dims"), std::string::npos) << why;
  // The declaration is what decides: without it the sort's [N] outputs would be sliced row by row.
  OpSchema uncoupled = load_test_schema("sort");
  uncoupled.coupled_dims.clear();
  KernelManifest m;
  CaseSpace space(uncoupled, m);
  EXPECT_EQ(sg::batch_inputs(uncoupled, build_case(space, {{"N", 6}}, 0, {}), 0, &why), V({true, true})) << why;
  EXPECT_EQ(batch_of("filter", {{"N", 6}}, 0, {{"threshold", 0.0}}, &why), V{});
}

// A real gate run on a corpus kernel, in the sandbox.
struct RealRun : CorpusKernelRun {
  explicit RealRun(const std::string& rel_manifest, uint64_t seed = 7)
      : CorpusKernelRun(rel_manifest, seed, "statelessness") {}
  GateVerdict run() { return make_gate("statelessness")->run(*ctx); }
};

// The verdict's replay file holds the smallest failing case, and replaying it reproduces the
// verdict and the first call's output bytes.
Case check_replay(RealRun& r, const GateVerdict& v) {
  EXPECT_FALSE(v.replay.empty());
  std::ifstream in(v.replay);
  const nlohmann::json replay = nlohmann::json::parse(in);
  EXPECT_EQ(replay["gate"], "statelessness");
  EXPECT_EQ(replay["outputs_sha256"], v.outputs_sha256);
  Case c;
  std::string error;
  EXPECT_TRUE(case_from_json(replay["case"], &c, &error)) << error;
  GateVerdict again = make_gate("statelessness")->check_one(*r.ctx, c);
  EXPECT_EQ(again.status, Status::Fail) << again.message;
  EXPECT_EQ(again.message.substr(0, 60), v.message.substr(0, 60));
  EXPECT_EQ(again.outputs_sha256, v.outputs_sha256);
  return c;
}

TEST(StatelessnessGate, ControlsPassSequencesAndBatchSlices) {
  for (const char* k : {"controls/layer_norm.json", "controls/bmm.json"}) {
    RealRun r(k);
    GateVerdict v = r.run();
    EXPECT_EQ(v.status, Status::Pass) << k << ": " << v.message;
    EXPECT_GE(v.evidence.value("sequences", 0), 10) << k;
    EXPECT_GE(v.evidence.value("batch_slices", 0), 3) << k << ": " << v.message;
    // A, A repeated, then at least one B and A again per sequence.
    EXPECT_GE(v.evidence.value("calls", 0), 4 * v.evidence.value("sequences", 0)) << k;
  }
}

TEST(StatelessnessGate, StaticOutputBufferIsCaughtOnTheFirstRepeat) {
  RealRun r("bugs/statelessness/relu_static_output.json");
  GateVerdict v = r.run();
  ASSERT_EQ(v.status, Status::Fail) << v.message;
  EXPECT_EQ(v.category, Category::WrongResult);
  EXPECT_NE(v.message.find("call 2 (A repeated) returns y in the same storage as call 1's output"), std::string::npos)
      << v.message;
  EXPECT_EQ(v.evidence.value("calls", 0), 2);
  const Case c = check_replay(r, v);
  EXPECT_EQ(numel(c.tensors[0]), 1) << "any shape shows it: " << v.message;
}

TEST(StatelessnessGate, BoundsCachedInAStaticAreStaleForTheNextBounds) {
  RealRun r("bugs/statelessness/clamp_static_bounds.json");
  GateVerdict v = r.run();
  ASSERT_EQ(v.status, Status::Fail) << v.message;
  EXPECT_NE(v.message.find("B: same shape, new values, hi=1, lo=-1"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("right as the first call of a fresh process"), std::string::npos) << v.message;
  const Case c = check_replay(r, v);
  EXPECT_EQ(numel(c.tensors[0]), 1) << v.message;
}

TEST(StatelessnessGate, BatchDependentTailFailsTheBatchProperty) {
  RealRun r("bugs/statelessness/sigmoid_simd_tail.json");
  GateVerdict v = r.run();
  ASSERT_EQ(v.status, Status::Fail) << v.message;
  EXPECT_NE(v.message.find("the batch property"), std::string::npos) << v.message;
  const Case c = check_replay(r, v);
  // Elements change path only when the row length is not a multiple of 8 and the batch has >= 2 rows.
  const auto& shape = c.tensors[0].shape;
  EXPECT_GE(shape[0], 2) << v.message;
  int64_t row = 1;
  for (size_t k = 1; k < shape.size(); ++k) row *= shape[k];
  EXPECT_NE(row % 8, 0) << v.message;
  EXPECT_LE(numel(c.tensors[0]), 64) << v.message;
}

}  // namespace
