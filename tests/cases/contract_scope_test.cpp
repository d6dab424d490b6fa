// Tests of a kernel's contract (ranks, layouts, equal dims) and the scope it gives each case:
// which cases lie outside it, how CaseSpace keeps to it, and the fail / unsafe / pass verdict.
#include <gtest/gtest.h>

#include <cstdio>

#include "gauntlet/cases/contract_check.h"
#include "gauntlet/cases/contract_scope.h"
#include "gauntlet/run/verify.h"
#include "../gates/real_run.h"

using namespace gauntlet;
using gauntlet::testing::load_test_schema;

namespace {

std::string write_temp(const std::string& text) {
  char name[] = "/tmp/gauntlet-contract-XXXXXX.json";
  int fd = mkstemps(name, 5);
  std::FILE* f = fdopen(fd, "w");
  std::fputs(text.c_str(), f);
  std::fclose(f);
  return name;
}

Case matmul_case(const OpSchema& s, const KernelManifest& m, int64_t M, int64_t K, int64_t N, bool hold = true) {
  CaseSpace space(s, m);
  Case c;
  std::string why;
  const std::map<std::string, int64_t> dims{{"M", M}, {"K", K}, {"N", N}};
  const bool ok = hold ? space.build(dims, 0, {}, DType::Float32, Distribution::Normal, 1, &c, &why)
                       : space.build_beyond_contract(dims, 0, {}, DType::Float32, Distribution::Normal, 1, &c, &why);
  EXPECT_TRUE(ok) << why;
  return c;
}

GateVerdict gate(const char* name, Status status, const char* scope) {
  GateVerdict v;
  v.name = name;
  v.status = status;
  if (is_failing(status)) v.category = status == Status::Fail ? Category::WrongResult : Category::Crash;
  v.scope = scope;
  return v;
}

}  // namespace

TEST(Contract, ManifestLoadsRanksLayoutsAndEqualDims) {
  const std::string p = write_temp(R"({"op": "matmul", "source": "k.cpp", "ranks": {"a": 2, "b": [2]},
     "layouts": ["contiguous"], "equal_dims": ["M", "K", "N"]})");
  std::string error;
  auto m = load_manifest(p, &error);
  ASSERT_TRUE(m) << error;
  EXPECT_EQ(m->ranks["a"], std::vector<int64_t>{2});
  EXPECT_EQ(m->ranks["b"], std::vector<int64_t>{2});
  EXPECT_EQ(m->layouts, std::vector<std::string>{"contiguous"});
  ASSERT_EQ(m->equal_dims.size(), 1u);  // one group written flat
  EXPECT_EQ(m->equal_dims[0], (std::vector<std::string>{"M", "K", "N"}));
  std::remove(p.c_str());
}

TEST(Contract, MalformedContractFieldsAreOneLineFieldErrors) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"op": "relu", "source": "k.cpp", "layouts": ["row-major"]})", "field 'layouts': unknown layout \"row-major\""},
      {R"({"op": "relu", "source": "k.cpp", "layouts": []})", "field 'layouts': must be a non-empty list"},
      {R"({"op": "relu", "source": "k.cpp", "ranks": {"x": 9}})", "field 'ranks/x': ranks are integers 0..8"},
      {R"({"op": "relu", "source": "k.cpp", "ranks": [2]})", "field 'ranks': must be an object"},
      {R"({"op": "matmul", "source": "k.cpp", "equal_dims": [["M"]]})", "field 'equal_dims': each group is a list of at least two"},
  };
  for (const auto& [text, want] : cases) {
    const std::string p = write_temp(text);
    std::string error;
    EXPECT_FALSE(load_manifest(p, &error)) << text;
    EXPECT_NE(error.find(p), std::string::npos) << error;
    EXPECT_NE(error.find(want), std::string::npos) << error;
    std::remove(p.c_str());
  }
}

TEST(Contract, CheckedAgainstTheSchemaBeforeAnythingRuns) {
  const OpSchema softmax = load_test_schema("softmax");
  const OpSchema matmul = load_test_schema("matmul");
  auto first_issue = [](const OpSchema& s, KernelManifest m) {
    auto issues = check_contract(s, &m);
    return issues.empty() ? std::string() : issues[0].field + ": " + issues[0].message;
  };
  KernelManifest m;
  m.ranks["x"] = {2, 3};
  EXPECT_EQ(first_issue(softmax, m), "");
  m.ranks["x"] = {4};
  EXPECT_NE(first_issue(softmax, m).find("ranks/x: op softmax gives x no rank-4 shape"), std::string::npos) << first_issue(softmax, m);
  m.ranks = {{"y", {2}}};
  EXPECT_NE(first_issue(softmax, m).find("ranks/y: op softmax has no input 'y'"), std::string::npos);
  m.ranks.clear();
  m.layouts = {"transposed"};
  EXPECT_NE(first_issue(softmax, m).find("layouts: must include \"contiguous\""), std::string::npos);
  KernelManifest q;
  q.equal_dims = {{"M", "Q"}};
  EXPECT_NE(first_issue(matmul, q).find("equal_dims: op matmul has no dim 'Q'"), std::string::npos);
  q.equal_dims = {{"M", "K", "N"}};
  EXPECT_EQ(first_issue(matmul, q), "");
}

// Dims the contract ties take the smallest size asked of any of them; beyond the contract they do not.
TEST(Contract, CaseSpaceKeepsEqualDimsEqual) {
  const OpSchema s = load_test_schema("matmul");
  KernelManifest m;
  m.equal_dims = {{"M", "K", "N"}};
  const Case held = matmul_case(s, m, 7, 5, 9);
  EXPECT_EQ(held.dims.at("M"), 5);
  EXPECT_EQ(held.dims.at("K"), 5);
  EXPECT_EQ(held.dims.at("N"), 5);
  EXPECT_EQ(held.tensors[0].shape, (std::vector<int64_t>{5, 5}));
  EXPECT_EQ(outside_contract_reason(m, held), "");
  const Case beyond = matmul_case(s, m, 7, 5, 9, false);
  EXPECT_EQ(beyond.tensors[0].shape, (std::vector<int64_t>{7, 5}));
  EXPECT_EQ(outside_contract_reason(m, beyond), "M = 7 and K = 5 differ; the kernel declares M, K, N equal");
  // Limits of tied dims intersect.
  m.shapes["N"] = DimLimit{std::nullopt, 64};
  EXPECT_EQ(CaseSpace(s, m).limits_for("M").second, 64);
}

// A declared structure reaches every case CaseSpace builds, inside the contract and beyond it
// (the values' promise does not depend on the shape), and is checked against the schema.
TEST(Contract, ADeclaredStructureShapesEveryCase) {
  const std::string p = write_temp(R"({"op": "matmul", "source": "k.cpp", "structure": {"a": "lower-triangular"}})");
  std::string error;
  auto m = load_manifest(p, &error);
  std::remove(p.c_str());
  ASSERT_TRUE(m) << error;
  EXPECT_EQ(m->structures.at("a"), "lower-triangular");
  const OpSchema s = load_test_schema("matmul");
  EXPECT_TRUE(check_contract(s, &*m).empty());
  for (bool hold : {true, false}) {
    const Case c = matmul_case(s, *m, 6, 6, 3, hold);
    EXPECT_EQ(c.tensors[0].structure, "lower-triangular");
    EXPECT_EQ(c.tensors[1].structure, "");
    const at::Tensor a = materialize(c.tensors[0]);
    EXPECT_TRUE(at::equal(a, a.tril())) << hold;
    EXPECT_FALSE(at::equal(a, a.triu())) << hold;
  }
  KernelManifest bad = *m;
  bad.structures = {{"q", "diagonal"}};
  auto issues = check_contract(s, &bad);
  ASSERT_FALSE(issues.empty());
  EXPECT_EQ(issues[0].field, "structure/q");
  const OpSchema embedding = load_test_schema("embedding");
  KernelManifest idx;
  idx.structures = {{embedding.inputs[1].name, "diagonal"}};
  issues = check_contract(embedding, &idx);
  ASSERT_FALSE(issues.empty()) << embedding.inputs[1].name;
  EXPECT_NE(issues[0].message.find("real-valued"), std::string::npos) << issues[0].message;
  const std::string wrong = write_temp(R"({"op": "matmul", "source": "k.cpp", "structure": {"a": "banded"}})");
  EXPECT_FALSE(load_manifest(wrong, &error));
  EXPECT_NE(error.find("field 'structure/a': unknown structure \"banded\""), std::string::npos) << error;
  std::remove(wrong.c_str());
}

TEST(Contract, CaseSpacePassesOverRanksTheContractExcludes) {
  const OpSchema s = load_test_schema("softmax");  // x: [M,N] or [B,M,N]
  KernelManifest m;
  m.ranks["x"] = {3};
  CaseSpace space(s, m);
  for (size_t alt = 0; alt < 2; ++alt) {
    Case c;
    std::string why;
    ASSERT_TRUE(space.build({{"B", 2}, {"M", 3}, {"N", 4}}, alt, {{"dim", int64_t(-1)}}, DType::Float32,
                            Distribution::Normal, 1, &c, &why)) << why;
    EXPECT_EQ(c.tensors[0].shape.size(), 3u) << alt;
    EXPECT_EQ(outside_contract_reason(m, c), "");
  }
  Case two;
  std::string why;
  ASSERT_TRUE(space.build_beyond_contract({{"B", 2}, {"M", 3}, {"N", 4}}, 0, {{"dim", int64_t(-1)}}, DType::Float32,
                                          Distribution::Normal, 1, &two, &why)) << why;
  EXPECT_EQ(outside_contract_reason(m, two), "x has rank 2; the kernel declares rank 3");
}

TEST(Contract, EachFieldPutsACaseOutside) {
  const OpSchema s = load_test_schema("matmul");
  KernelManifest all;
  Case c = matmul_case(s, all, 4, 6, 8);
  EXPECT_EQ(outside_contract_reason(all, c), "");  // no field: the schema's whole domain

  KernelManifest layouts;
  layouts.layouts = {"contiguous", "strided"};
  c.tensors[1].layout = "strided";
  EXPECT_EQ(outside_contract_reason(layouts, c), "");
  c.tensors[1].layout = "transposed";
  EXPECT_EQ(outside_contract_reason(layouts, c), "b is transposed; the kernel declares the layouts contiguous, strided");
  c.tensors[1].layout = "contiguous";

  KernelManifest dtypes;
  dtypes.dtypes = {DType::Float16};
  EXPECT_EQ(outside_contract_reason(dtypes, c), "a is float32, a dtype the kernel does not declare");
  // The declared dtypes narrow the case dtype (the first floating input's), not a later input of
  // a fixed dtype of its own: fp8_matmul's float32 scales beside its declared e4m3 data (measured
  // on the H100: every case had been out of contract, so its planted bugs came out "unsafe").
  KernelManifest e4m3;
  e4m3.dtypes = {DType::Float8E4M3};
  Case fp8 = c;
  fp8.tensors[0].dtype = DType::Float8E4M3;
  EXPECT_EQ(outside_contract_reason(e4m3, fp8), "");
  fp8.tensors[0].dtype = DType::Float16;
  EXPECT_EQ(outside_contract_reason(e4m3, fp8), "a is float16, a dtype the kernel does not declare");

  KernelManifest limits;
  limits.shapes["K"] = DimLimit{8, std::nullopt};
  EXPECT_EQ(outside_contract_reason(limits, c), "K = 6 is below the kernel's declared min 8");
  limits.shapes["K"] = DimLimit{std::nullopt, 5};
  EXPECT_EQ(outside_contract_reason(limits, c), "K = 6 is above the kernel's declared max 5");

  KernelManifest ranks;
  ranks.ranks["a"] = {3};
  EXPECT_EQ(outside_contract_reason(ranks, c), "a has rank 2; the kernel declares rank 3");

  // An error input (the shapes gate's) is outside whatever the manifest says.
  c.outside_contract = "inner dims differ";
  EXPECT_EQ(outside_contract_reason(all, c), "inner dims differ");
}

TEST(Contract, KernelVerdictSeparatesUnsafeFromFail) {
  const GateVerdict pass = gate("accuracy", Status::Pass, kInContract);
  const GateVerdict skip = gate("gradients", Status::Skip, "");
  const GateVerdict fail_in = gate("accuracy", Status::Fail, kInContract);
  const GateVerdict fail_out = gate("layouts", Status::Fail, kOutOfContract);
  const GateVerdict crash_out = gate("shapes", Status::Error, kOutOfContract);
  const GateVerdict crash_in = gate("memory", Status::Error, kInContract);
  const GateVerdict unscoped = gate("timing", Status::Fail, "");  // nothing proved it outside
  GateVerdict harness_out = gate("layouts", Status::HarnessError, kOutOfContract);
  harness_out.category = Category::HarnessError;
  EXPECT_EQ(kernel_verdict({pass, skip}), "pass");
  EXPECT_EQ(kernel_verdict({pass, fail_out}), "unsafe");
  EXPECT_EQ(kernel_verdict({pass, crash_out, fail_out}), "unsafe");
  EXPECT_EQ(kernel_verdict({fail_out, fail_in}), "fail");
  EXPECT_EQ(kernel_verdict({fail_out, crash_in}), "error");
  EXPECT_EQ(kernel_verdict({crash_in, fail_in}), "fail");
  EXPECT_EQ(kernel_verdict({pass, unscoped}), "fail");
  EXPECT_EQ(kernel_verdict({pass, harness_out}), "error");  // gauntlet's fault, whatever its scope
  EXPECT_FALSE(fails_in_contract(fail_out));
  EXPECT_TRUE(fails_in_contract(harness_out));
  EXPECT_TRUE(fails_in_contract(unscoped));
}

TEST(Contract, AGateReportsTheScopeOfWhatItRan) {
  GateVerdict v = gate("layouts", Status::Pass, "");
  settle_scope(v, 10, 0);
  EXPECT_EQ(v.scope, kInContract);
  settle_scope(v, 0, 7);
  EXPECT_EQ(v.scope, kOutOfContract);
  EXPECT_EQ(v.evidence["cases_out_of_contract"], 7);
  settle_scope(v, 3, 4);
  EXPECT_EQ(v.scope, kMixedScope);
  GateVerdict f = gate("accuracy", Status::Fail, "");
  settle_scope(f, 3, 4);
  EXPECT_EQ(f.scope, kInContract);  // a failure nothing marked outside is the kernel's
  GateVerdict s = gate("gradients", Status::Skip, "x");
  settle_scope(s, 0, 0);
  EXPECT_EQ(s.scope, "");
}

TEST(Contract, UnsafeExitsOneUnlessAllowed) {
  KernelReport r;
  r.verdict = "unsafe";
  r.gates = {gate("layouts", Status::Fail, kOutOfContract)};
  EXPECT_EQ(exit_code_for(r), 1);
  EXPECT_EQ(exit_code_for(r, true), 0);
  r.verdict = "fail";
  r.gates = {gate("accuracy", Status::Fail, kInContract)};
  EXPECT_EQ(exit_code_for(r, true), 1);
  r.gates.push_back(gate("layouts", Status::HarnessError, kOutOfContract));
  EXPECT_EQ(exit_code_for(r, true), 2);
}

TEST(Contract, AStoredGateKeepsItsScope) {
  GateVerdict v = gate("shapes", Status::Fail, kOutOfContract);
  std::string error;
  auto back = gate_from_json(gate_to_json(v), &error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(back->scope, kOutOfContract);
  nlohmann::json old = gate_to_json(v);
  old.erase("scope");  // a record stored before scopes existed
  back = gate_from_json(old, &error);
  ASSERT_TRUE(back) << error;
  EXPECT_TRUE(fails_in_contract(*back));
}

TEST(Contract, AKernelBenchModuleIsContiguousOnly) {
  KernelManifest py;
  py.source = "m.py";
  apply_contract_defaults(&py);
  EXPECT_EQ(py.layouts, std::vector<std::string>{"contiguous"});
  py.layouts = {"contiguous", "transposed"};
  apply_contract_defaults(&py);
  EXPECT_EQ(py.layouts.size(), 2u);  // what its manifest declares stands
  // Mapped to a schema: no empty dim either (get_inputs() never builds one), unless it says.
  const OpSchema matmul = load_test_schema("matmul");
  KernelManifest mapped;
  mapped.source = "m.py";
  mapped.shapes["K"] = DimLimit{0, std::nullopt};
  apply_contract_defaults(&mapped, &matmul);
  EXPECT_EQ(*mapped.shapes.at("M").min, 1);
  EXPECT_EQ(*mapped.shapes.at("K").min, 0);
  Case empty = matmul_case(matmul, KernelManifest{}, 0, 4, 4);
  EXPECT_EQ(outside_contract_reason(mapped, empty), "M = 0 is below the kernel's declared min 1");
  KernelManifest native;
  native.source = "k.cpp";
  apply_contract_defaults(&native, &matmul);
  EXPECT_TRUE(native.layouts.empty());
  EXPECT_TRUE(native.shapes.empty());
}
