// Tests of the subnormals gate: its plans and edge values, real runs on controls and planted bugs with shrunk cases.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "gauntlet/build/builder.h"
#include "gauntlet/cases/gate.h"
#include "real_run.h"
#include "gauntlet/common/numerics.h"
#include "gauntlet/oracle/oracle.h"

using namespace gauntlet;
using gauntlet::testing::CorpusKernelRun;
using gauntlet::testing::load_test_schema;

// gates/subnormals.cpp has no header of its own (one file per gate): its testable pieces are
// declared here exactly as defined there.
namespace gauntlet::subnormals {
enum class Mix { None, Normal, Edge, ExpWindow };
struct Fill {
  Distribution base;
  Mix mix = Mix::None;
};
struct Plan {
  std::vector<Fill> fills;
  bool fp16_only = false;
};
std::vector<Plan> plans_for(const OpSchema& schema);
struct AttributePlan {
  std::string attr;
  double value = 0;
};
std::vector<AttributePlan> attribute_plans(const OpSchema& schema, const AttrMap& fixed = {});
double mix_value(Mix mix, DType dtype, uint64_t seed, uint64_t t, uint64_t k, double shift);
}  // namespace gauntlet::subnormals

namespace {

using subnormals::Mix;

bool uses(const std::vector<subnormals::Plan>& plans, Distribution d) {
  for (const auto& p : plans)
    for (const auto& f : p.fills)
      if (f.base == d) return true;
  return false;
}

TEST(SubnormalsPlans, EveryOpGetsSubnormalsAndItsOwnEdgeCases) {
  for (const std::string& op : oracle_ids()) {
    const OpSchema s = load_test_schema(op);
    const auto plans = subnormals::plans_for(s);
    size_t floating = 0;
    for (const InputSpec& in : s.inputs) floating += !is_integer_value_kind(in.values.kind);
    if (floating == 0) {  // unique, hash_join: nothing to place a subnormal in (the gate skips)
      EXPECT_TRUE(plans.empty()) << op;
      continue;
    }
    ASSERT_FALSE(plans.empty()) << op;
    for (const auto& p : plans) {
      EXPECT_EQ(p.fills.size(), floating) << op << ": one distribution per floating input";
      // Near-max values in a sum or dot product overflow a float32 accumulator for float32 and
      // bfloat16 data (the accumulation gate's case), so there they are float16-only.
      if (s.reduction && s.oracle != "amax" && s.oracle != "softmax" && s.oracle != "log_softmax" &&
          s.oracle != "logsumexp") {
        bool all_big = true;
        for (const auto& f : p.fills) all_big &= f.base == Distribution::NearMax || f.base == Distribution::Normal;
        bool any_big = false;
        for (const auto& f : p.fills) any_big |= f.base == Distribution::NearMax;
        if (any_big && all_big) EXPECT_TRUE(p.fp16_only) << op;
      }
    }
    EXPECT_TRUE(uses(plans, Distribution::Subnormal)) << op;
    EXPECT_TRUE(uses(plans, Distribution::NearMinNormal) || op == "softmax") << op;
  }
  for (const char* op : {"softmax", "log_softmax", "logsumexp", "cross_entropy", "sdpa"})
    EXPECT_TRUE(uses(subnormals::plans_for(load_test_schema(op)), Distribution::LargeLogits)) << op;
  for (const char* op : {"layer_norm", "rms_norm"})
    EXPECT_TRUE(uses(subnormals::plans_for(load_test_schema(op)), Distribution::TinySpread)) << op;
}

TEST(SubnormalsPlans, AnOpWithoutFloatingInputsGetsItsSubnormalAttributeValues) {
  // dequantize: int8 data, a float32 output made by its scale: the declared scales below FLT_MIN.
  const auto plans = subnormals::attribute_plans(load_test_schema("dequantize"));
  std::set<double> values;
  for (const auto& p : plans) {
    EXPECT_EQ(p.attr, "scale");
    EXPECT_GT(p.value, 0);
    EXPECT_LT(p.value, num::limits(DType::Float32).min_normal);
    values.insert(p.value);
  }
  EXPECT_TRUE(values.count(std::ldexp(1.0, -140))) << "the scale whose every product is subnormal";
  EXPECT_TRUE(values.count(std::ldexp(1.0, -127)));
  EXPECT_EQ(values.size(), 3u);
  // Integer outputs only (unique, hash_join) or floating inputs of their own (their plans do it).
  for (const char* op : {"unique", "hash_join", "quantize_per_tensor", "relu"})
    EXPECT_TRUE(subnormals::attribute_plans(load_test_schema(op)).empty()) << op;
  // A contract that fixes the scale keeps it: a normal one leaves no plan (a module takes it at
  // construction and would be judged at a scale it never saw), a subnormal one is the only plan.
  EXPECT_TRUE(subnormals::attribute_plans(load_test_schema("dequantize"), {{"scale", 0.1}}).empty());
  const auto pinned = subnormals::attribute_plans(load_test_schema("dequantize"), {{"scale", std::ldexp(1.0, -140)}});
  ASSERT_EQ(pinned.size(), 1u);
  EXPECT_EQ(pinned[0].value, std::ldexp(1.0, -140));
}

TEST(SubnormalsPlans, ExpWindowValuesLandWhereExpIsSubnormal) {
  for (DType dt : {DType::Float32, DType::Float16, DType::BFloat16}) {
    const num::DTypeLimits lim = num::limits(dt);
    int subnormal = 0;
    for (uint64_t k = 0; k < 200; ++k) {
      const double v = subnormals::mix_value(Mix::ExpWindow, dt, 99, 0, k, 0.0);
      EXPECT_EQ(num::round_to(dt, v), v) << "not representable";
      const double e = std::exp(v);
      EXPECT_GT(e, lim.min_subnormal / 4) << dtype_name(dt);
      EXPECT_LT(e, 2.5 * lim.min_normal) << dtype_name(dt);  // 1.65 * min_normal, then rounded (bfloat16: +-0.25)
      const double r = num::round_to(dt, e);
      if (r != 0 && r < lim.min_normal) ++subnormal;
    }
    EXPECT_GT(subnormal, 120) << dtype_name(dt) << ": most results must be nonzero subnormals";
    // The shift moves the window (softmax divides by K).
    const double shifted = subnormals::mix_value(Mix::ExpWindow, dt, 99, 0, 3, 4.0);
    const double unshifted = subnormals::mix_value(Mix::ExpWindow, dt, 99, 0, 3, 0.0);
    EXPECT_NEAR(shifted - unshifted, 4.0, dt == DType::Float32 ? 1e-5 : 1.0);
  }
}

TEST(SubnormalsPlans, EdgeValuesAreTheDtypeThresholds) {
  for (DType dt : {DType::Float32, DType::Float16, DType::BFloat16}) {
    const num::DTypeLimits lim = num::limits(dt);
    std::set<double> seen;
    for (uint64_t k = 0; k < 400; ++k) {
      const double v = subnormals::mix_value(Mix::Edge, dt, 5, 1, k, 0.0);
      EXPECT_EQ(num::round_to(dt, v), v);
      EXPECT_TRUE(std::isfinite(v));
      seen.insert(v);
    }
    for (double want : {lim.min_subnormal, -lim.min_subnormal, lim.min_normal - lim.min_subnormal, lim.min_normal,
                        lim.max_finite, -lim.max_finite})
      EXPECT_TRUE(seen.count(want)) << dtype_name(dt) << " " << want;
    EXPECT_EQ(seen.size(), 14u) << dtype_name(dt);
  }
}

// A real gate run on a corpus kernel, in the sandbox.
struct RealRun : CorpusKernelRun {
  explicit RealRun(const std::string& rel_manifest, uint64_t seed = 5)
      : CorpusKernelRun(rel_manifest, seed, "subnormals") {}
};

TEST(SubnormalsGate, ControlsPassWithSubnormalAndOverflowedResultsChecked) {
  int64_t subnormal = 0, overflow = 0;
  for (const char* control : {"controls/sigmoid.json", "controls/softmax.json", "controls/matmul.json",
                              "controls/rms_norm.json", "controls/add.json"}) {
    RealRun r(control);
    GateVerdict v = make_gate("subnormals")->run(*r.ctx);
    EXPECT_EQ(v.status, Status::Pass) << control << ": " << v.message;
    // Every plan in every dtype, four cases each.
    EXPECT_EQ(v.cases % 4, 0) << control;
    EXPECT_GE(v.cases, 36) << control;
    EXPECT_GT(v.evidence.value("evidence_cases", 0), 0) << control;
    subnormal += v.evidence.value("subnormal_expected", int64_t(0));
    overflow += v.evidence.value("overflow_expected", int64_t(0));
    if (std::string(control) == "controls/sigmoid.json")
      EXPECT_GT(v.evidence.value("subnormal_expected", int64_t(0)), 0) << "the exp window yields subnormal sigmoids";
  }
  EXPECT_GT(subnormal, 100);
  EXPECT_GT(overflow, 0);  // add of near-max values, float16 matmul of near-max rows
}

// The planted bug fails; the replay file holds the shrunk case, which reproduces the verdict and
// the output bytes; returns that case.
Case expect_failure_replays(RealRun& r, const GateVerdict& v) {
  EXPECT_EQ(v.status, Status::Fail) << v.message;
  EXPECT_EQ(v.category, Category::WrongResult);
  EXPECT_FALSE(v.replay.empty());
  if (v.replay.empty()) return {};
  std::ifstream in(v.replay);
  const nlohmann::json replay = nlohmann::json::parse(in);
  EXPECT_EQ(replay["gate"], "subnormals");
  EXPECT_EQ(replay["outputs_sha256"], v.outputs_sha256);
  Case c;
  std::string error;
  EXPECT_TRUE(case_from_json(replay["case"], &c, &error)) << error;
  EXPECT_EQ(c.label, v.evidence.value("smallest_case", ""));
  GateVerdict again = make_gate("subnormals")->check_one(*r.ctx, c);
  EXPECT_EQ(again.status, Status::Fail) << again.message;
  EXPECT_EQ(again.outputs_sha256, v.outputs_sha256);
  return c;
}

TEST(SubnormalsGate, FloatSigmoidShrinksToOneUnderflowingElement) {
  RealRun r("bugs/subnormals/sigmoid_float_exp_overflow.json");
  GateVerdict v = make_gate("subnormals")->run(*r.ctx);
  Case c = expect_failure_replays(r, v);
  ASSERT_EQ(c.tensors.size(), 1u);
  // Shrunk: one element, holding the one value whose sigmoid is a subnormal the kernel returns as 0.
  EXPECT_EQ(c.tensors[0].shape, std::vector<int64_t>{1}) << c.label;
  ASSERT_EQ(c.tensors[0].specials.size(), 1u) << c.label;
  const double x = c.tensors[0].specials[0].second;
  EXPECT_LT(x, -88.7) << "expf(-x) overflows only below -88.72";
  EXPECT_GT(x, -104.0) << "below -103.97 the correctly rounded sigmoid is 0 too";
  EXPECT_NE(v.message.find("got 0,"), std::string::npos) << v.message;
  // The same element with a normal-range sigmoid passes: the failure is the underflow's.
  c.tensors[0].specials[0].second = -20.0;
  EXPECT_EQ(make_gate("subnormals")->check_one(*r.ctx, c).status, Status::Pass);
}

TEST(SubnormalsGate, SoftmaxFlushingSubnormalProbabilitiesFails) {
  RealRun r("bugs/subnormals/softmax_exp_no_denormals.json");
  GateVerdict v = make_gate("subnormals")->run(*r.ctx);
  Case c = expect_failure_replays(r, v);
  EXPECT_NE(v.message.find("got 0,"), std::string::npos) << v.message;
  EXPECT_NE(c.tensors[0].dtype, DType::Float16) << "float16 subnormals lie far above exp's flush threshold";
}

TEST(SubnormalsGate, OnePassVarianceFailsOnTinySpreadRows) {
  RealRun r("bugs/subnormals/layer_norm_one_pass_var.json");
  GateVerdict v = make_gate("subnormals")->run(*r.ctx);
  Case c = expect_failure_replays(r, v);
  EXPECT_EQ(c.tensors[0].distribution, Distribution::TinySpread) << c.label;
  EXPECT_EQ(c.tensors[0].dtype, DType::Float32) << c.label;
  EXPECT_GE(c.tensors[0].shape.back(), 2) << "one element has no variance to get wrong";
  // The accuracy gate's inputs do not show it: the same case with normal rows passes.
  c.tensors[0].distribution = Distribution::Normal;
  EXPECT_EQ(make_gate("subnormals")->check_one(*r.ctx, c).status, Status::Pass);
}

}  // namespace

TEST(SubnormalsGate, AnIntegerInputOpIsJudgedAtItsSubnormalScales) {
  // dequantize has no floating input; its subnormal scales make subnormal results, kept by the
  // control and flushed to zero by the planted bug, which every other gate passes.
  RealRun control("controls/dequantize.json");
  GateVerdict v = make_gate("subnormals")->run(*control.ctx);
  EXPECT_EQ(v.status, Status::Pass) << v.message;
  EXPECT_GT(v.evidence.value("subnormal_expected", int64_t(0)), 0) << v.message;
  RealRun bug("bugs/subnormals/dequantize_flush_subnormal.json");
  GateVerdict f = make_gate("subnormals")->run(*bug.ctx);
  Case c = expect_failure_replays(bug, f);
  EXPECT_NE(f.message.find("got 0,"), std::string::npos) << f.message;
  ASSERT_TRUE(c.attrs.count("scale")) << c.label;
  EXPECT_LT(attr_as_double(c.attrs.at("scale")), num::limits(DType::Float32).min_normal) << c.label;
}
