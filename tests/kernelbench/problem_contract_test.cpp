// Tests of binding a module's contract to its problem's get_inputs() (problem_contract.h): which
// shapes bind to which dims, which cannot bind and why, and the contract the binding leaves.
#include <gtest/gtest.h>

#include "gauntlet/cases/contract_scope.h"
#include "gauntlet/oracle/module_oracle.h"
#include "gauntlet/kernelbench/problem_contract.h"
#include "../gates/real_run.h"

using namespace gauntlet;
using gauntlet::testing::load_test_schema;

namespace {

ModuleDescription described(std::vector<std::vector<int64_t>> shapes, DType dtype = DType::Float32) {
  ModuleDescription d;
  for (auto& s : shapes) {
    ModuleDescription::Input in;
    in.shape = s;
    in.dtype = dtype;
    d.inputs.push_back(in);
  }
  return d;
}

KernelManifest problem(const std::string& op, std::vector<std::string> inputs) {
  KernelManifest m;
  m.op = op;
  m.source = "m.py";
  m.shapes_from_get_inputs = true;
  m.problem_inputs = std::move(inputs);
  return m;
}

Case build(const OpSchema& s, const KernelManifest& m, std::map<std::string, int64_t> dims) {
  CaseSpace space(s, m);
  Case c;
  std::string why;
  EXPECT_TRUE(space.build_beyond_contract(dims, 0, {}, DType::Float32, Distribution::Normal, 1, &c, &why)) << why;
  return c;
}

}  // namespace

TEST(ProblemContract, MatmulDimsBindFromBothInputs) {
  const OpSchema s = load_test_schema("matmul");
  KernelManifest m = problem("matmul", {"a", "b"});
  const ProblemBinding b = bind_problem_shapes(s, m, described({{64, 256}, {256, 32}}));
  ASSERT_TRUE(b.bound) << b.why_not;
  EXPECT_EQ(b.dims, (std::map<std::string, int64_t>{{"M", 64}, {"K", 256}, {"N", 32}}));
  apply_problem_binding(b, &m);
  EXPECT_EQ(*m.shapes.at("K").min, 256);
  EXPECT_EQ(*m.shapes.at("K").max, 256);
  EXPECT_EQ(m.dtypes, std::vector<DType>{DType::Float32});
  // The problem's own case is inside the contract; one size apart is not, and says which dim.
  EXPECT_EQ(outside_contract_reason(m, build(s, m, {{"M", 64}, {"K", 256}, {"N", 32}})), "");
  EXPECT_NE(outside_contract_reason(m, build(s, m, {{"M", 64}, {"K", 257}, {"N", 32}})).find("K = 257"), std::string::npos);
  EXPECT_NE(outside_contract_reason(m, build(s, m, {{"M", 3}, {"K", 256}, {"N", 32}})).find("M = 3"), std::string::npos);
}

// A mapped problem whose get_inputs() builds a lower-triangular a: the binding carries that into
// the manifest's structure, and every case built under it keeps the triangle.
TEST(ProblemContract, AStructuredInputReachesTheContractAndItsCases) {
  const OpSchema s = load_test_schema("matmul");
  KernelManifest m = problem("matmul", {"a", "b"});
  ModuleDescription d = described({{16, 16}, {16, 16}});
  d.inputs[0].structure = "lower-triangular";
  ProblemBinding b = bind_problem_shapes(s, m, d);
  ASSERT_TRUE(b.bound) << b.why_not;
  b.structures = problem_structures(s, m, d);
  EXPECT_EQ(b.structures, (std::map<std::string, std::string>{{"a", "lower-triangular"}}));
  EXPECT_EQ(problem_binding_json(b)["structure"]["a"], "lower-triangular");
  apply_problem_binding(b, &m);
  EXPECT_EQ(m.structures.at("a"), "lower-triangular");
  const Case c = build(s, m, {{"M", 16}, {"K", 16}, {"N", 16}});
  const at::Tensor a = materialize(c.tensors[0]);
  EXPECT_TRUE(at::equal(a, a.tril()));
  EXPECT_EQ(c.tensors[1].structure, "");
  // A description whose tensor count differs from the map's binds no structure.
  KernelManifest one = problem("matmul", {"a"});
  EXPECT_TRUE(problem_structures(s, one, d).empty());
  // Not bound (ranks only), the structure still holds: it is a property of the values.
  ProblemBinding unbound;
  unbound.structures = {{"b", "upper-triangular"}};
  KernelManifest n = problem("matmul", {"a", "b"});
  apply_problem_binding(unbound, &n);
  EXPECT_EQ(n.structures.at("b"), "upper-triangular");
}

TEST(ProblemContract, TheRankPicksTheShapeAlternative) {
  const OpSchema s = load_test_schema("relu");
  const KernelManifest m = problem("relu", {"x"});
  const ProblemBinding two = bind_problem_shapes(s, m, described({{16, 1024}}));
  ASSERT_TRUE(two.bound) << two.why_not;
  EXPECT_EQ(two.dims, (std::map<std::string, int64_t>{{"M", 16}, {"N", 1024}}));
  // The rank is the contract's too: x [1024] has N = 1024 but is not the problem's input.
  KernelManifest bound = m;
  apply_problem_binding(two, &bound);
  EXPECT_EQ(bound.ranks.at("x"), std::vector<int64_t>{2});
  CaseSpace space(s, bound);
  Case flat;
  std::string why;
  ASSERT_TRUE(space.build_beyond_contract({{"B", 1}, {"M", 16}, {"N", 1024}}, 0, {}, DType::Float32,
                                          Distribution::Normal, 1, &flat, &why)) << why;
  ASSERT_EQ(flat.tensors[0].shape.size(), 1u);
  EXPECT_NE(outside_contract_reason(bound, flat).find("rank 1"), std::string::npos);
  const ProblemBinding three = bind_problem_shapes(s, m, described({{2, 16, 1024}}, DType::Float16));
  ASSERT_TRUE(three.bound) << three.why_not;
  EXPECT_EQ(three.dims, (std::map<std::string, int64_t>{{"B", 2}, {"M", 16}, {"N", 1024}}));
  EXPECT_EQ(three.dtype, DType::Float16);
}

TEST(ProblemContract, ShapesThatDoNotFitAreNotBoundAndSayWhy) {
  const OpSchema s = load_test_schema("matmul");
  const KernelManifest m = problem("matmul", {"a", "b"});
  // Inner dims disagree: K would take two sizes.
  const ProblemBinding clash = bind_problem_shapes(s, m, described({{64, 256}, {128, 32}}));
  EXPECT_FALSE(clash.bound);
  EXPECT_NE(clash.why_not.find("fits no shape"), std::string::npos) << clash.why_not;
  EXPECT_TRUE(clash.dims.empty());
  // A tensor count the map does not name.
  const ProblemBinding count = bind_problem_shapes(s, m, described({{64, 256}}));
  EXPECT_FALSE(count.bound);
  EXPECT_NE(count.why_not.find("returns 1 tensors"), std::string::npos) << count.why_not;
  // Past the schema's element cap in an explicitly shaped output (9_Tall_skinny: [16384, 16] x
  // [16, 16384] makes a 16384 x 16384 output).
  const ProblemBinding big = bind_problem_shapes(s, m, described({{16384, 16}, {16, 16384}}));
  EXPECT_FALSE(big.bound);
  EXPECT_NE(big.why_not.find("in output"), std::string::npos) << big.why_not;
  const OpSchema relu = load_test_schema("relu");
  // Inside every dim's domain but over the schema's element cap (KernelBench's newer 19_ReLU is
  // 4096 x 393216): not bound.
  ASSERT_GT(relu.max_numel, 0);
  const ProblemBinding huge = bind_problem_shapes(relu, problem("relu", {"x"}), described({{4096, 393216}}));
  EXPECT_FALSE(huge.bound);
  EXPECT_NE(huge.why_not.find("over schema relu's max_numel"), std::string::npos) << huge.why_not;
  // Nothing bound leaves the manifest as it was.
  KernelManifest untouched = m;
  apply_problem_binding(clash, &untouched);
  EXPECT_TRUE(untouched.shapes.empty());
  EXPECT_TRUE(untouched.dtypes.empty());
}

// A size past the schema's dim domain but inside its element cap (6_Matmul_with_large_K: K =
// 131072 where the matmul schema draws K up to 8192) binds, and the case space builds it.
TEST(ProblemContract, ASizePastTheSchemasDomainBindsAndBuilds) {
  const OpSchema s = load_test_schema("matmul");
  KernelManifest m = problem("matmul", {"a", "b"});
  const int64_t K = 131072;
  ASSERT_GT(K, s.dims.at("K").max);
  const ProblemBinding b = bind_problem_shapes(s, m, described({{256, K}, {K, 256}}));
  ASSERT_TRUE(b.bound) << b.why_not;
  apply_problem_binding(b, &m);
  CaseSpace space(s, m);
  EXPECT_EQ(space.limits_for("K"), (std::pair<int64_t, int64_t>{K, K}));
  EXPECT_EQ(space.sizes_for("K"), std::vector<int64_t>{K});
  Case c;
  std::string why;
  ASSERT_TRUE(space.typical_case(0, DType::Float32, Distribution::Normal, 1, &c, &why)) << why;
  EXPECT_EQ(c.tensors[0].shape, (std::vector<int64_t>{256, K}));
  EXPECT_EQ(outside_contract_reason(m, c), "");
}

TEST(ProblemContract, TheProblemsSizeWinsOverANarrowerMapLimit) {
  const OpSchema s = load_test_schema("matmul");
  KernelManifest m = problem("matmul", {"a", "b"});
  m.shapes["N"] = DimLimit{1, 1};  // the map says mat-vec; get_inputs() says otherwise
  const ProblemBinding b = bind_problem_shapes(s, m, described({{8, 16}, {16, 4}}));
  ASSERT_TRUE(b.bound) << b.why_not;
  apply_problem_binding(b, &m);
  EXPECT_EQ(*m.shapes.at("N").min, 4);
  EXPECT_EQ(*m.shapes.at("N").max, 4);
}

TEST(ProblemContract, TheReportSaysWhatTheContractHolds) {
  const OpSchema s = load_test_schema("relu");
  const ProblemBinding b = bind_problem_shapes(s, problem("relu", {"x"}), described({{16, 1024}}));
  const nlohmann::json j = problem_binding_json(b);
  EXPECT_EQ(j["bound"], true);
  EXPECT_EQ(j["dims"]["N"], 1024);
  EXPECT_EQ(j["inputs"], "x [16, 1024] float32");
  const ProblemBinding no = bind_problem_shapes(s, problem("relu", {"x", "y"}), described({{16, 1024}}));
  EXPECT_EQ(problem_binding_json(no)["bound"], false);
  EXPECT_FALSE(problem_binding_json(no)["why_not"].get<std::string>().empty());
}
