// Tests of the shapes gate: held-out size candidates, the case budget, and real runs on a control and planted bugs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "gauntlet/build/builder.h"
#include "gauntlet/cases/contract_scope.h"
#include "gauntlet/cases/gate.h"
#include "real_run.h"
#include "shapes_budget.h"  // the gate's budget and size candidates (gates/shapes_budget.cpp)

using namespace gauntlet;
using gauntlet::testing::CorpusKernelRun;
using gauntlet::testing::load_test_schema;


namespace {

namespace sg = gauntlet::shapes_gate;

bool contains(const std::vector<int64_t>& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

TEST(ShapesCandidates, PrimesTileEdgesHazardsLargestAndZeroAscending) {
  OpSchema s = load_test_schema("matmul");  // M: 1..8192, zero allowed
  KernelManifest m;
  CaseSpace space(s, m);
  const auto c = sg::size_candidates(space, "M");
  ASSERT_FALSE(c.empty());
  EXPECT_TRUE(std::is_sorted(c.begin(), c.end()));
  EXPECT_EQ(std::adjacent_find(c.begin(), c.end()), c.end()) << "duplicates";
  EXPECT_EQ(c.front(), 0) << "zero-size first: it is allowed and the smallest";
  EXPECT_EQ(c[1], 1);
  EXPECT_EQ(c.back(), 8192) << "the largest declared size";
  for (int64_t p : {3, 7, 13, 31, 61, 127, 251, 509, 1021, 2039, 4093, 8191}) EXPECT_TRUE(contains(c, p)) << p;
  for (int64_t t : {8, 16, 32, 64, 128, 256, 512, 1024})
    for (int64_t d : {-1, 0, 1}) EXPECT_TRUE(contains(c, t + d)) << t + d;
  for (int64_t h : s.dims.at("M").hazards) EXPECT_TRUE(contains(c, h)) << h;
  // Held-out sizes only in the interesting places: not every size up to the max.
  EXPECT_LT(c.size(), 60u);
}

TEST(ShapesCandidates, NoZeroWhereTheSchemaExcludesIt) {
  OpSchema s = load_test_schema("softmax");  // N: zero_allowed false
  KernelManifest m;
  CaseSpace space(s, m);
  const auto c = sg::size_candidates(space, "N");
  EXPECT_EQ(c.front(), 1);
  EXPECT_FALSE(contains(c, 0));
  EXPECT_EQ(c.back(), 65536);
  for (int64_t h : {4095, 4096, 4097}) EXPECT_TRUE(contains(c, h)) << h;
}

TEST(ShapesCandidates, TheManifestNarrowsThem) {
  OpSchema s = load_test_schema("softmax");
  KernelManifest m;
  m.shapes["N"].min = 2;
  m.shapes["N"].max = 1000;
  CaseSpace space(s, m);
  const auto c = sg::size_candidates(space, "N");
  EXPECT_EQ(c.front(), 2);
  EXPECT_EQ(c.back(), 1000) << "the kernel's largest declared size";
  for (int64_t v : c) EXPECT_TRUE(v >= 2 && v <= 1000) << v;
  EXPECT_FALSE(contains(c, 1024));
  EXPECT_TRUE(contains(c, 513));
}

Case build_case(const CaseSpace& space, const std::map<std::string, int64_t>& dims, AttrMap attrs = {}) {
  Case c;
  std::string why;
  EXPECT_TRUE(space.build(dims, 0, attrs, DType::Float32, Distribution::Normal, 1, &c, &why)) << why;
  return c;
}

TEST(ShapesBudget, CapsElementsOfInputsAndOutputsAndTheOraclesFlops) {
  OpSchema mm = load_test_schema("matmul");
  KernelManifest m;
  CaseSpace space(mm, m);
  const sg::Budget b = sg::sweep_budget(1);
  std::string why;
  // The largest declared M with the other dims small fits: that is what the sweep runs.
  EXPECT_TRUE(sg::within_budget(mm, build_case(space, {{"M", 8192}, {"K", 3}, {"N", 3}}), b, &why)) << why;
  // Small inputs whose output is 8192 x 8192: the output counts.
  EXPECT_FALSE(sg::within_budget(mm, build_case(space, {{"M", 8192}, {"K", 1}, {"N", 8192}}), b, &why));
  EXPECT_NE(why.find("output y"), std::string::npos) << why;
  // Small tensors, large oracle work (2*M*N*K): the flops expression counts.
  EXPECT_FALSE(sg::within_budget(mm, build_case(space, {{"M", 256}, {"K", 256}, {"N", 256}}), b, &why));
  EXPECT_NE(why.find("flops"), std::string::npos) << why;

  OpSchema emb = load_test_schema("embedding");
  CaseSpace es(emb, m);
  const Case big_v = build_case(es, {{"V", 1048576}, {"D", 1}, {"N", 1}});
  EXPECT_FALSE(sg::within_budget(emb, big_v, b, &why));
  EXPECT_NE(why.find("input weight"), std::string::npos) << why;
  // --budget multiplies the caps.
  EXPECT_TRUE(sg::within_budget(emb, big_v, sg::sweep_budget(8), &why)) << why;
  // Random combinations get a much smaller cap than the one-large-dim sweep.
  EXPECT_LT(sg::combo_budget(1).elements, b.elements);
  EXPECT_LT(sg::combo_budget(1).flops, b.flops);
}

TEST(ShapesCase, OutsideContractSurvivesJson) {
  Case c;
  c.label = "x";
  c.outside_contract = "an index >= V must be rejected";
  TensorRecipe r;
  r.name = "idx";
  r.dtype = DType::Int64;
  r.shape = {4};
  r.distribution = Distribution::Index;
  r.low = 10;
  r.high = 20;
  c.tensors.push_back(r);
  Case back;
  std::string error;
  ASSERT_TRUE(case_from_json(case_to_json(c), &back, &error)) << error;
  EXPECT_EQ(back.outside_contract, c.outside_contract);
  EXPECT_EQ(back.tensors[0].low, 10);
  // Cases inside the contract carry no such field.
  Case in;
  in.label = "y";
  EXPECT_FALSE(case_to_json(in).contains("outside_contract"));
}

// A real gate run on a corpus kernel, in the sandbox.
struct RealRun : CorpusKernelRun {
  explicit RealRun(const std::string& rel_manifest) : CorpusKernelRun(rel_manifest, 7, "shapes") {}
  GateVerdict run() { return make_gate("shapes")->run(*ctx); }
};

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

TEST(ShapesGate, ControlPassesAndRejectsItsErrorInputs) {
  RealRun r("controls/matmul.json");
  GateVerdict v = r.run();
  EXPECT_EQ(v.status, Status::Pass) << v.message;
  EXPECT_GT(v.cases, 60) << v.message;
  EXPECT_GE(v.evidence.value("rejected_outside_contract", 0), 1) << v.message;
}

TEST(ShapesGate, TileTailBugFailsAtTheSmallestFailingShape) {
  RealRun r("bugs/shapes/matmul_row_tile_tail.json");
  GateVerdict v = r.run();
  ASSERT_EQ(v.status, Status::Fail) << v.message;
  EXPECT_EQ(v.category, Category::WrongResult);
  // M = 17 is the smallest M with a partial tile after a full one; N and K shrink to 1.
  EXPECT_NE(v.message.find("a=[17,1] b=[1,1]"), std::string::npos) << v.message;
  ASSERT_FALSE(v.replay.empty());
  const nlohmann::json replay = read_json(v.replay);
  EXPECT_EQ(replay["gate"], "shapes");
  EXPECT_EQ(replay["case"]["dims"]["M"], 17);
  EXPECT_EQ(replay["outputs_sha256"], v.outputs_sha256);
  // The recorded case replays to the same verdict and outputs.
  Case c;
  std::string error;
  ASSERT_TRUE(case_from_json(replay["case"], &c, &error)) << error;
  GateVerdict again = make_gate("shapes")->check_one(*r.ctx, c);
  EXPECT_EQ(again.status, Status::Fail);
  EXPECT_EQ(again.outputs_sha256, v.outputs_sha256);
}

TEST(ShapesGate, ValuesForAnErrorInputFail) {
  RealRun r("bugs/shapes/embedding_clamp_index.json");
  GateVerdict v = r.run();
  ASSERT_EQ(v.status, Status::Fail) << v.message;
  EXPECT_EQ(v.category, Category::WrongResult);
  EXPECT_NE(v.message.find("returned values for an input outside its contract (an index >= V must be rejected)"),
            std::string::npos)
      << v.message;
  const nlohmann::json replay = read_json(v.replay);
  EXPECT_EQ(replay["case"]["outside_contract"], "an index >= V must be rejected");
  EXPECT_EQ(v.scope, kOutOfContract);
  Case c;
  std::string error;
  ASSERT_TRUE(case_from_json(replay["case"], &c, &error)) << error;
  EXPECT_EQ(make_gate("shapes")->check_one(*r.ctx, c).status, Status::Fail);
}

// Past a declared limit a kernel must refuse or be right: wrong values there fail the gate, out of
// contract (the kernel is unsafe, not failing), and the replay file says why the case is outside.
TEST(ShapesGate, ShapesPastTheManifestsLimitMustBeRefusedOrRight) {
  RealRun r("bugs/shapes/layer_norm_declared_max_unchecked.json");
  GateVerdict v = r.run();
  ASSERT_EQ(v.status, Status::Fail) << v.message;
  EXPECT_EQ(v.scope, kOutOfContract);
  EXPECT_NE(v.message.find("D = 1025 is above the kernel's declared max 1024"), std::string::npos) << v.message;
  EXPECT_EQ(read_json(v.replay)["outside_contract"], "D = 1025 is above the kernel's declared max 1024");
}

// The right answer past a declared limit passes: the correct control declared narrower than it is.
TEST(ShapesGate, TheRightAnswerPastADeclaredLimitPasses) {
  const std::string dir = std::string(GAUNTLET_SOURCE_DIR) + "/corpus/controls";
  char path[] = "/tmp/gauntlet-narrow-XXXXXX.json";
  const int fd = mkstemps(path, 5);
  const std::string text = R"({"op": "layer_norm", "source": ")" + dir + R"(/layer_norm.cpp", "dtypes": ["float32"],
     "shapes": {"D": {"max": 64}}})";
  ASSERT_EQ(write(fd, text.data(), text.size()), ssize_t(text.size()));
  close(fd);
  RealRun r(path);
  GateVerdict v = r.run();
  std::remove(path);
  ASSERT_EQ(v.status, Status::Pass) << v.message;
  EXPECT_GE(v.evidence.value("answered_outside_contract", 0), 1) << v.evidence.dump();
  EXPECT_NE(v.message.find("outside the contract answered within tolerance"), std::string::npos) << v.message;
}

// Refusing past a declared limit passes too: the square-only matmul that checks its contract.
TEST(ShapesGate, RefusingOutsideTheContractPasses) {
  RealRun r("contracts/matmul_square_checked.json");
  GateVerdict v = r.run();
  ASSERT_EQ(v.status, Status::Pass) << v.message;
  EXPECT_GE(v.evidence.value("rejected_outside_contract", 0), 2) << v.evidence.dump();
}

}  // namespace
