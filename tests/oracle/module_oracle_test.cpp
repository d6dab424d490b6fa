// The module oracle's pure parts: the reference child's description, the synthesized schema and the
// module-envelope tolerance (the child itself runs in tests/e2e/module_oracle_test.cpp).
#include "gauntlet/oracle/module_oracle.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "gauntlet/cases/judge.h"
#include "gauntlet/common/numerics.h"

using namespace gauntlet;

namespace {

ModuleDescription two_inputs() {
  std::string error;
  auto d = parse_module_description(
      R"({"inputs": [{"dtype": "float32", "shape": [4, 8], "kind": "nonnegative"},
                     {"dtype": "int64", "shape": [4], "kind": "index", "low": 0, "high": 8}],
          "outputs": [{"dtype": "float32", "shape": [4]}],
          "ops": ["aten::gather", "aten::mul"], "key_ops": ["aten::gather"], "copied_state": 2})",
      &error);
  EXPECT_TRUE(d) << error;
  return d ? *d : ModuleDescription{};
}

TEST(ModuleOracle, ParsesTheReferenceChildsDescription) {
  const ModuleDescription d = two_inputs();
  ASSERT_EQ(d.inputs.size(), 2u);
  EXPECT_EQ(d.inputs[0].dtype, DType::Float32);
  EXPECT_EQ(d.inputs[0].kind, "nonnegative");
  EXPECT_EQ(d.inputs[1].dtype, DType::Int64);
  EXPECT_EQ(d.inputs[1].high, 8);
  ASSERT_EQ(d.outputs.size(), 1u);
  EXPECT_EQ(d.outputs[0].shape, std::vector<int64_t>{4});
  EXPECT_EQ(d.key_ops, std::vector<std::string>{"aten::gather"});
  EXPECT_EQ(d.copied_state, 2);
  std::string error;
  EXPECT_FALSE(parse_module_description("{\"inputs\": []}", &error));
  EXPECT_NE(error.find("malformed"), std::string::npos) << error;
  EXPECT_FALSE(parse_module_description(R"({"inputs": [{"dtype": "float33", "shape": [1]}], "outputs": []})", &error));
}

TEST(ModuleOracle, SynthesizedSchemaFixesGetInputsShapes) {
  const OpSchema s = module_schema(two_inputs(), "m.py", "module:7");
  EXPECT_TRUE(is_module_schema(s));
  EXPECT_EQ(s.name, "module");
  ASSERT_EQ(s.inputs.size(), 2u);
  EXPECT_EQ(s.inputs[0].shapes, (std::vector<std::vector<std::string>>{{"x0_0", "x0_1"}}));
  EXPECT_EQ(s.dims.at("x0_1").min, 8);
  EXPECT_EQ(s.dims.at("x0_1").max, 8);
  EXPECT_EQ(s.inputs[0].values.kind, "nonnegative");
  EXPECT_EQ(s.inputs[1].values.kind, "index");
  EXPECT_EQ(s.inputs[1].values.below, "8");
  EXPECT_EQ(s.outputs.at(0).dims, std::vector<std::string>{"4"});
  EXPECT_EQ(s.outputs.at(0).dtype, "same:x0");
  EXPECT_EQ(s.case_dtypes(), std::vector<DType>{DType::Float32});
  ASSERT_TRUE(s.tolerance.count(DType::Float32));
  EXPECT_EQ(s.tolerance.at(DType::Float32).mode, "module-envelope");
  EXPECT_FALSE(s.tolerance.count(DType::Int64));
  EXPECT_EQ(s.forbidden_ops, std::vector<std::string>{"aten::gather"});
  EXPECT_FALSE(is_module_schema(OpSchema{}));
}

// The envelope: 16x the framework's worst relative error, at least the float32 floor; elements
// where the framework overflowed are unjudged; the judge applies it through the schema tolerance.
TEST(ModuleOracle, EnvelopeScalesWithTheFrameworksOwnError) {
  const OpSchema s = module_schema(two_inputs(), "m.py", "module:7");
  const Tolerance& tol = s.tolerance.at(DType::Float32);
  const at::Tensor ref = at::tensor({1.0, 2.0, -3.0, 4.0}, at::kDouble);
  const int64_t K = 100;
  const double u32 = num::limits(DType::Float32).unit_roundoff;
  const double floor_rel = kFloorC * u32 * std::sqrt(double(K));

  // The framework exact: the floor alone.
  OracleResult exact = module_envelope({ref}, {ref.to(at::kFloat)}, DType::Float32, K);
  ASSERT_TRUE(exact.ok());
  const double m = 2.5;  // mean |ref|
  const double want0 = floor_rel * (1.0 + m);
  EXPECT_NEAR(allowed_error(DType::Float32, tol, 1.0, exact.scales[0][0].item<double>(), 1),
              want0 + kEnvelopeUlps * num::ulp_at(DType::Float32, 1.0), want0 * 1e-9);

  // The framework off by 1e-5 relative at one element: 16x that everywhere.
  at::Tensor lib = ref.clone();
  lib[1] = 2.0 + 1e-5 * (2.0 + m);
  OracleResult loose = module_envelope({ref}, {lib.to(at::kDouble)}, DType::Float32, K);
  const double rel = kEnvelopeFactor * 1e-5;
  EXPECT_GT(rel, floor_rel);
  EXPECT_NEAR(loose.scales[0][3].item<double>() * u32, rel * (4.0 + m), rel * (4.0 + m) * 1e-6);

  // A candidate 10x the framework's error passes, 100x fails.
  at::Tensor out = ref.clone();
  out[2] = -3.0 - 10 * 1e-5 * (3.0 + m);
  EXPECT_TRUE(judge_output("y", out, loose.outputs[0], loose.scales[0], DType::Float64, tol, 1).pass);
  out[2] = -3.0 - 100 * 1e-5 * (3.0 + m);
  EXPECT_FALSE(judge_output("y", out, loose.outputs[0], loose.scales[0], DType::Float64, tol, 1).pass);

  // The framework non-finite where the reference is finite: that element is unjudged, even NaN,
  // and it does not widen the others' tolerance.
  lib = ref.clone();
  lib[0] = INFINITY;
  OracleResult amb = module_envelope({ref}, {lib}, DType::Float32, K);
  EXPECT_TRUE(std::isinf(amb.scales[0][0].item<double>()));
  EXPECT_NEAR(amb.scales[0][1].item<double>() * u32, floor_rel * (2.0 + m), 1e-12);
  out = ref.clone();
  out[0] = NAN;
  const Judgement j = judge_output("y", out, amb.outputs[0], amb.scales[0], DType::Float64, tol, 1);
  EXPECT_TRUE(j.pass) << j.message;
  EXPECT_EQ(j.unjudged, 1);

  // Where the reference itself is NaN the candidate must be NaN too.
  at::Tensor nan_ref = ref.clone();
  nan_ref[3] = NAN;
  OracleResult with_nan = module_envelope({nan_ref}, {nan_ref}, DType::Float32, K);
  out = ref.clone();
  EXPECT_FALSE(judge_output("y", out, with_nan.outputs[0], with_nan.scales[0], DType::Float64, tol, 1).pass);
}

// The fused envelope is the plain one: on outputs with NaN, infinities, a framework that overflowed
// at some elements and is off a little elsewhere, across chunk boundaries, the same unjudged
// elements and the same scales (up to the mean's summation order); and the same bits whatever the
// thread count.
TEST(ModuleOracle, FusedEnvelopeEqualsThePlainOne) {
  at::manual_seed(7);
  const int64_t n = 3 * (int64_t(1) << 16) + 1234;
  at::Tensor ref = at::randn({n}, at::kDouble) * 10;
  ref[5] = NAN;
  ref[70000] = INFINITY;
  ref[140000] = -INFINITY;
  at::Tensor lib = (ref * (1 + 1e-6 * at::randn({n}, at::kDouble))).to(at::kFloat);
  lib[9] = INFINITY;            // the framework overflowed where the reference is finite
  lib[100000] = lib[100000] * 2;  // far off: unjudged
  for (DType dtype : {DType::Float32, DType::Float16}) {
    for (bool with_lib : {true, false}) {
      const std::vector<at::Tensor> libs = with_lib ? std::vector<at::Tensor>{lib} : std::vector<at::Tensor>{};
      const OracleResult plain = module_envelope_reference({ref}, libs, dtype, 64);
      const OracleResult fused = module_envelope({ref}, libs, dtype, 64);
      ASSERT_TRUE(fused.ok() && plain.ok());
      ASSERT_EQ(fused.scales.size(), 1u);
      const at::Tensor a = fused.scales[0], b = plain.scales[0];
      EXPECT_TRUE(at::equal(at::isinf(a), at::isinf(b))) << with_lib;
      // float16 allows the doubled element (its ambiguity bound is wider): only the overflow is unjudged.
      EXPECT_EQ(at::isinf(a).sum().item<int64_t>(), with_lib ? (dtype == DType::Float32 ? 2 : 1) : 0);
      const at::Tensor finite = at::isfinite(b);
      const double worst = ((a - b).abs() / b.abs().clamp_min(1e-300)).masked_select(finite).max().item<double>();
      EXPECT_LT(worst, 1e-12) << with_lib;
      EXPECT_TRUE(at::equal(fused.outputs[0].isnan(), plain.outputs[0].isnan()));
    }
  }
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  const at::Tensor one = module_envelope({ref}, {lib}, DType::Float32, 64).scales[0];
  at::set_num_threads(std::max(2, threads));
  const at::Tensor many = module_envelope({ref}, {lib}, DType::Float32, 64).scales[0];
  at::set_num_threads(threads);
  EXPECT_TRUE(at::equal(one, many));
}

// "reference": resolved beside the manifest, only for Python modules, and carried in the Load's entry.
TEST(ModuleOracle, ManifestReferenceField) {
  char tmpl[] = "/tmp/gauntlet-modref-XXXXXX";
  ASSERT_TRUE(mkdtemp(tmpl));
  const std::string dir = tmpl;
  auto write = [](const std::string& path, const std::string& text) {
    FILE* f = fopen(path.c_str(), "w");
    ASSERT_TRUE(f);
    fputs(text.c_str(), f);
    fclose(f);
  };
  write(dir + "/ref.py", "class Model: pass\n");
  write(dir + "/m.json", R"({"op": "module", "source": "cand.py", "reference": "ref.py"})");
  write(dir + "/native.json", R"({"op": "relu", "source": "relu.cpp", "reference": "ref.py"})");
  std::string error;
  auto m = load_manifest(dir + "/m.json", &error);
  ASSERT_TRUE(m) << error;
  EXPECT_EQ(m->reference, dir + "/ref.py");
  EXPECT_EQ(python_load_entry(*m, "ModelNew"), "ModelNew|" + dir + "/ref.py");
  KernelManifest plain;
  EXPECT_EQ(python_load_entry(plain, "ModelNew"), "ModelNew");
  EXPECT_FALSE(load_manifest(dir + "/native.json", &error));
  EXPECT_NE(error.find("field 'reference'"), std::string::npos) << error;
  for (const char* f : {"/ref.py", "/m.json", "/native.json"}) unlink((dir + f).c_str());
  rmdir(dir.c_str());
}

TEST(ModuleOracle, UnknownIdsAreOracleErrorsNotCrashes) {
  EXPECT_TRUE(is_module_oracle_id("module:99"));
  EXPECT_FALSE(is_module_oracle_id("softmax"));
  const OracleResult r = run_oracle("module:99", {at::ones({2})}, {});
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error.find("no live module reference"), std::string::npos) << r.error;
}

}  // namespace
