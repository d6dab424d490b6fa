// Tests of the accumulation gate: its generators along the reduced axis, and real runs on controls and planted bugs.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "gauntlet/build/builder.h"
#include "gauntlet/cases/gate.h"
#include "real_run.h"
#include "gauntlet/common/numerics.h"
#include "gauntlet/oracle/superacc.h"

using namespace gauntlet;
using gauntlet::testing::CorpusKernelRun;

namespace {

TensorRecipe row_recipe(Distribution d, DType dt, std::vector<int64_t> shape, int64_t axis) {
  TensorRecipe r;
  r.name = "x";
  r.dtype = dt;
  r.shape = std::move(shape);
  r.distribution = d;
  r.axis = axis;
  r.seed = 11;
  return r;
}

// Exact sum of one row (a line along `axis` of a 2-D tensor) rounded to float64.
double exact_row_sum(const at::Tensor& x, int64_t axis, int64_t row) {
  at::Tensor line = (axis == 1 ? x.select(0, row) : x.select(1, row)).to(at::kDouble).contiguous();
  SuperAccumulator acc;
  for (int64_t k = 0; k < line.numel(); ++k) acc.add(line[k].item<double>());
  return acc.round_to(DType::Float64);
}

}  // namespace

TEST(AccumulationGenerators, SwampRowsHoldOneLargeValueAlongTheAxis) {
  for (int64_t axis : {int64_t(1), int64_t(0)}) {
    const std::vector<int64_t> shape = axis == 1 ? std::vector<int64_t>{8, 512} : std::vector<int64_t>{512, 8};
    at::Tensor x = materialize(row_recipe(Distribution::Swamp, DType::Float16, shape, axis)).to(at::kDouble);
    for (int64_t row = 0; row < 8; ++row) {
      at::Tensor line = axis == 1 ? x.select(0, row) : x.select(1, row);
      const double large = line.abs().max().item<double>();
      EXPECT_GE(large, 64.0);
      // Every other value is below half an ulp of the large one in float16 (2^-11 relative).
      EXPECT_EQ((line.abs() == large).sum().item<int64_t>(), 1) << row;
      EXPECT_LE((line.abs().sum().item<double>() - large) / 511, large * std::ldexp(1.0, -11));
      if (row % 2 == 0) EXPECT_EQ(std::fabs(line[0].item<double>()), large) << "even rows: large value first";
    }
  }
}

TEST(AccumulationGenerators, PartialSumsOverflowFloat16WhileTheExactSumFits) {
  at::Tensor x = materialize(row_recipe(Distribution::PartialOverflow, DType::Float16, {4, 4096}, -1));
  for (int64_t row = 0; row < 4; ++row) {
    at::Tensor line = x.select(0, row).to(at::kDouble);
    const double half = line.slice(0, 0, 2048).sum().item<double>();
    EXPECT_GT(std::fabs(half), 2 * 65504.0) << "the first half overflows float16";
    const double exact = exact_row_sum(x, 1, row);
    EXPECT_LT(std::fabs(exact), 65504.0 / 8) << "the exact sum fits easily";
    EXPECT_NE(exact, 0.0);
  }
  // Cancellation: the same shape at magnitudes 1..8: partial sums far above the exact result.
  at::Tensor c = materialize(row_recipe(Distribution::Cancellation, DType::BFloat16, {4, 4096}, -1));
  for (int64_t row = 0; row < 4; ++row) {
    const double peak = c.select(0, row).slice(0, 0, 2048).to(at::kDouble).abs().sum().item<double>();
    EXPECT_LT(std::fabs(exact_row_sum(c, 1, row)) * 16, peak);
  }
}

TEST(AccumulationGenerators, IntegerDataIsExactInFloat32) {
  at::Tensor x = materialize(row_recipe(Distribution::IntegerExact, DType::Float16, {2, 4096}, -1)).to(at::kDouble);
  EXPECT_TRUE(at::equal(x, x.round()));
  EXPECT_GE(x.min().item<double>(), -7);
  EXPECT_LE(x.max().item<double>(), 16);
  // A float32 running sum is exact (partial sums below 2^24), so it matches the exact oracle.
  at::Tensor row = x.select(0, 0);
  float running = 0;
  for (int64_t k = 0; k < row.numel(); ++k) running += float(row[k].item<double>());
  EXPECT_EQ(double(running), exact_row_sum(x, 1, 0));
  EXPECT_GT(running, 2048.f) << "past float16's exact-integer range";
}

TEST(AccumulationGenerators, RecipesRoundTripWithTheirAxis) {
  Case c;
  c.dims = {{"N", 8}};
  c.tensors.push_back(row_recipe(Distribution::Swamp, DType::Float16, {8, 4}, 0));
  c.tensors.push_back(row_recipe(Distribution::NearOne, DType::Float16, {4, 8}, -1));
  Case back;
  std::string error;
  nlohmann::json j = case_to_json(c);
  EXPECT_EQ(j["tensors"][0]["axis"], 0);
  EXPECT_FALSE(j["tensors"][1].contains("axis")) << "only row-structured recipes carry an axis";
  ASSERT_TRUE(case_from_json(j, &back, &error)) << error;
  EXPECT_EQ(back.tensors[0].axis, 0);
  EXPECT_EQ(back.tensors[0].distribution, Distribution::Swamp);
  EXPECT_TRUE(at::equal(materialize(back.tensors[0]), materialize(c.tensors[0])));
  // Older replay files (no axis field) keep the default: the last dim.
  j["tensors"][0].erase("axis");
  Case old;
  ASSERT_TRUE(case_from_json(j, &old, &error)) << error;
  EXPECT_EQ(old.tensors[0].axis, -1);
}

// A real gate run on a corpus kernel, in the sandbox.
struct RealRun : CorpusKernelRun {
  explicit RealRun(const std::string& rel_manifest, uint64_t seed = 5)
      : CorpusKernelRun(rel_manifest, seed, "accumulation") {}
};

TEST(AccumulationGate, ControlsPassAgainstTheExactOracle) {
  for (const char* control : {"controls/sum.json", "controls/matmul.json", "controls/mean.json"}) {
    RealRun r(control);
    GateVerdict v = make_gate("accumulation")->run(*r.ctx);
    EXPECT_EQ(v.status, Status::Pass) << control << ": " << v.message;
    EXPECT_GT(v.evidence.value("exact_oracle_cases", 0), 10) << control;
    EXPECT_GE(v.evidence.value("terms", int64_t(0)), 4096) << control;
  }
}

TEST(AccumulationGate, ElementwiseOpsAndAmaxSkipWithTheReason) {
  for (const char* control : {"controls/relu.json", "controls/amax.json"}) {
    RealRun r(control);
    GateVerdict v = make_gate("accumulation")->run(*r.ctx);
    EXPECT_EQ(v.status, Status::Skip) << control;
    EXPECT_FALSE(v.message.empty());
  }
}

TEST(AccumulationGate, PlantedHalfAccumulatorsFailAndReplay) {
  for (const char* bug : {"bugs/accumulation/sum_two_level_half_combine.json",
                          "bugs/accumulation/matmul_split_k_half_epilogue.json"}) {
    RealRun r(bug);
    GateVerdict v = make_gate("accumulation")->run(*r.ctx);
    ASSERT_EQ(v.status, Status::Fail) << bug << ": " << v.message;
    EXPECT_EQ(v.category, Category::WrongResult);
    // float32 passes (a float32 accumulator); the 16-bit dtypes are what fail.
    EXPECT_EQ(v.message.find("case float32"), std::string::npos) << v.message;
    EXPECT_TRUE(v.evidence.contains("implied_accumulator")) << v.evidence.dump();
    ASSERT_FALSE(v.replay.empty());
    std::ifstream in(v.replay);
    const nlohmann::json replay = nlohmann::json::parse(in);
    EXPECT_EQ(replay["gate"], "accumulation");
    Case c;
    std::string error;
    ASSERT_TRUE(case_from_json(replay["case"], &c, &error)) << error;
    GateVerdict again = make_gate("accumulation")->check_one(*r.ctx, c);
    EXPECT_EQ(again.status, Status::Fail) << again.message;
    EXPECT_EQ(again.outputs_sha256, v.outputs_sha256);
  }
}

TEST(AccumulationGate, ASquareOnlyContractStillGetsLongReductions) {
  // M = K = N ties the terms to the rows: the gate sizes the square to its CPU budget (512^3), not
  // to the 8 rows it asks elsewhere, so a long-K path that accumulates in float16 is reached.
  RealRun control("contracts/matmul_square_checked.json");
  GateVerdict pass = make_gate("accumulation")->run(*control.ctx);
  EXPECT_EQ(pass.status, Status::Pass) << pass.message;
  EXPECT_EQ(pass.evidence.value("terms", int64_t(0)), 512) << pass.evidence.dump();

  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "gauntlet-accumulation-square-test";
  std::filesystem::create_directories(dir);
  const std::string manifest = (dir / "matmul_square_long_k_half.json").string();
  std::ofstream(manifest) << nlohmann::json{
      {"op", "matmul"},
      {"source", std::string(GAUNTLET_SOURCE_DIR) + "/tests/data/accumulation/matmul_square_long_k_half.cpp"},
      {"device", "cpu"},
      {"dtypes", {"float16"}},
      {"equal_dims", {{"M", "K", "N"}}}}.dump();
  RealRun bug(manifest);
  GateVerdict v = make_gate("accumulation")->run(*bug.ctx);
  ASSERT_EQ(v.status, Status::Fail) << v.message;
  EXPECT_EQ(v.category, Category::WrongResult);
  // Shrunk from 512 to the bug's own threshold, and no further (a square of 128 passes).
  EXPECT_NE(v.message.find("K=256"), std::string::npos) << v.message;
  std::filesystem::remove_all(dir);
}
