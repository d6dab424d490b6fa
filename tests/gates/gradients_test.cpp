// Tests of the gradients gate: controls' backwards pass, planted backward bugs fail and replay, no backward skips.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "gauntlet/build/builder.h"
#include "gauntlet/cases/gate.h"
#include "real_run.h"
#include "../test_files.h"

using namespace gauntlet;
using gauntlet::testing::CorpusKernelRun;

namespace {

// A real gate run on a corpus kernel (forward and backward built into one object), in the sandbox.
struct GradRun : CorpusKernelRun {
  explicit GradRun(const std::string& rel_manifest, uint64_t seed = 7)
      : CorpusKernelRun(rel_manifest, seed, "gradients") {}
};

TEST(GradientsGate, ControlBackwardsPassInEveryDtype) {
  for (const char* control : {"controls/softmax.json", "controls/layer_norm.json"}) {
    for (uint64_t seed : {7u, 8u}) {
      GradRun r(control, seed);
      GateVerdict v = make_gate("gradients")->run(*r.ctx);
      EXPECT_EQ(v.status, Status::Pass) << control << " seed " << seed << ": " << v.message;
      // Three small non-vacuous cases in each of three dtypes (vacuous ones are drawn past).
      EXPECT_EQ(v.evidence.value("evidence_cases", 0), 9) << control;
      EXPECT_GE(v.cases, 9) << control;
      EXPECT_EQ(v.evidence.value("reference", ""), "autograd") << control;
    }
  }
}

TEST(GradientsGate, KernelsWithoutBackwardSkipWithTheReason) {
  for (const char* control : {"controls/relu.json", "controls/matmul.json"}) {
    GradRun r(control);
    GateVerdict v = make_gate("gradients")->run(*r.ctx);
    EXPECT_EQ(v.status, Status::Skip) << control;
    EXPECT_NE(v.message.find("no backward entry"), std::string::npos) << v.message;
  }
}

// The planted bug fails with a wrong result on the named gradient; its replay file reproduces it.
void expect_failure_replays(const char* manifest, const std::string& gradient) {
  GradRun r(manifest);
  GateVerdict v = make_gate("gradients")->run(*r.ctx);
  EXPECT_EQ(v.status, Status::Fail) << v.message;
  EXPECT_EQ(v.category, Category::WrongResult);
  EXPECT_NE(v.message.find(gradient + "["), std::string::npos) << v.message;
  ASSERT_FALSE(v.replay.empty());
  std::ifstream in(v.replay);
  const nlohmann::json replay = nlohmann::json::parse(in);
  EXPECT_EQ(replay["gate"], "gradients");
  EXPECT_EQ(replay["kernel"]["backward"], "backward");
  EXPECT_EQ(replay["outputs_sha256"], v.outputs_sha256);
  Case c;
  std::string error;
  ASSERT_TRUE(case_from_json(replay["case"], &c, &error)) << error;
  GateVerdict again = make_gate("gradients")->check_one(*r.ctx, c);
  EXPECT_EQ(again.status, Status::Fail) << again.message;
  EXPECT_EQ(again.message, v.message);
  EXPECT_EQ(again.outputs_sha256, v.outputs_sha256);
}

TEST(GradientsGate, SoftmaxBackwardWithoutTheSumTermFails) {
  expect_failure_replays("bugs/gradients/softmax_backward_no_sum.json", "dx");
}

TEST(GradientsGate, LayerNormBackwardWithoutTheMeanTermFails) {
  expect_failure_replays("bugs/gradients/layer_norm_backward_no_mean.json", "dx");
}

TEST(GradientsGate, SoftmaxBackwardAccumulatingInHalfFailsOnlyInHalf) {
  expect_failure_replays("bugs/gradients/softmax_backward_half_accum.json", "dx");
  // The same kernel held to float32 alone passes: the tolerance is not what fails it.
  GradRun r("bugs/gradients/softmax_backward_half_accum.json");
  r.manifest.dtypes = {DType::Float32};
  CaseSpace f32(r.schema, r.manifest);
  GateContext ctx{r.schema, r.manifest, f32, r.launcher, r.build.so_path, r.build.source_hash, "", 7, 1, r.replay_dir, ""};
  GateVerdict v = make_gate("gradients")->run(ctx);
  EXPECT_EQ(v.status, Status::Pass) << v.message;
}

TEST(GradientsGate, ABackwardWithTheWrongSignatureIsAnError) {
  // The forward entry named as the backward: it cannot take the output gradient.
  GradRun r("controls/softmax.json");
  r.manifest.backward_entry = r.manifest.entry;
  GateVerdict v = make_gate("gradients")->run(*r.ctx);
  EXPECT_EQ(v.status, Status::Error) << v.message;
  EXPECT_NE(v.message.find("backward"), std::string::npos) << v.message;
}

// Backwards that break the calling convention's contract: one kernel, several entries.
TEST(GradientsGate, ContractOfTheReturnedGradientsIsChecked) {
  char tmpl[] = "/tmp/gauntlet-gradients-contract-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string source = dir + "/softmax_bad_backwards.cpp";
  std::ofstream(source) << R"(#include <torch/torch.h>
torch::Tensor forward(const torch::Tensor& x, int64_t dim) {
  return at::softmax(x.to(at::kDouble), dim).to(x.scalar_type());
}
static torch::Tensor dx(const torch::Tensor& x, int64_t dim, const torch::Tensor& g) {
  const auto y = at::softmax(x.to(at::kDouble), dim);
  const auto gd = g.to(at::kDouble);
  return y * (gd - (y * gd).sum(dim, true));
}
torch::Tensor backward_float(const torch::Tensor& x, int64_t dim, const torch::Tensor& g) {
  return dx(x, dim, g).to(at::kFloat);
}
std::vector<torch::Tensor> backward_two(const torch::Tensor& x, int64_t dim, const torch::Tensor& g) {
  return {dx(x, dim, g).to(x.scalar_type()), g};
}
torch::Tensor backward_flat(const torch::Tensor& x, int64_t dim, const torch::Tensor& g) {
  return dx(x, dim, g).to(x.scalar_type()).reshape({-1});
}
)";
  GradRun r("controls/softmax.json");
  r.manifest.source = source;
  r.manifest.dtypes = {DType::Float16};
  BuildRequest req;
  req.source_path = source;
  req.entries = {"forward", "backward_float", "backward_two", "backward_flat"};
  BuildResult build = build_kernel(req, default_build_config());
  ASSERT_TRUE(build.ok) << build.error;
  CaseSpace f16(r.schema, r.manifest);
  GateContext ctx{r.schema, r.manifest, f16, r.launcher, build.so_path, build.source_hash, "", 7, 1, r.replay_dir, ""};
  for (const auto& [entry, says] : std::vector<std::pair<std::string, std::string>>{
           {"backward_float", "has dtype Float, expected the input's Half"},
           {"backward_two", "backward returned 2 tensors, expected one gradient per tensor input (1)"},
           {"backward_flat", "has shape ["}}) {
    r.manifest.backward_entry = entry;
    GateVerdict v = make_gate("gradients")->run(ctx);
    EXPECT_EQ(v.status, Status::Fail) << entry << ": " << v.message;
    EXPECT_EQ(v.category, Category::WrongResult) << entry;
    EXPECT_NE(v.message.find(says), std::string::npos) << entry << ": " << v.message;
  }
  gauntlet::testing::remove_tree(dir);
}

}  // namespace
