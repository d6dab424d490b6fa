// Issue 20's case-generation additions: tied float values (ValueDomain::ties), attributes drawn from
// an input's values (AttrSpec::drawn_from), and integer outputs judged exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>

#include "gauntlet/cases/case.h"
#include "gauntlet/cases/judge.h"
#include "gauntlet/schema/schema.h"

namespace gauntlet {
namespace {

OpSchema load(const std::string& op) {
  std::vector<SchemaIssue> issues;
  auto s = load_schema_file(std::string(GAUNTLET_SOURCE_DIR) + "/opschemas/" + op + ".json", &issues);
  EXPECT_TRUE(s) << op;
  return s ? *s : OpSchema{};
}

std::vector<double> doubles(const at::Tensor& t) {
  const at::Tensor d = t.to(at::kDouble).contiguous();
  return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}

// Over the accuracy gate's distributions and many seeds, sort's keys meet every tie spread, each
// with far fewer distinct values than elements; ascending and descending runs come out monotone,
// all_equal is one value; the U[0,1) draws of the KernelBench-style check stay untied.
TEST(TiedValues, SortKeysMeetEverySpreadWithManyTies) {
  const OpSchema s = load("sort");
  KernelManifest m;
  CaseSpace space(s, m);
  std::set<std::string> seen;
  bool signed_zeros = false;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    for (Distribution d : accuracy_distributions()) {
      Case c;
      std::string error;
      std::map<std::string, int64_t> dims = {{"N", 1024}};
      ASSERT_TRUE(space.build(dims, 0, {}, DType::Float32, d, seed, &c, &error)) << error;
      const TensorRecipe& r = c.tensors[0];
      ASSERT_FALSE(r.ties.empty());
      seen.insert(r.ties);
      const std::vector<double> k = doubles(materialize(r));
      std::set<double> distinct(k.begin(), k.end());
      EXPECT_LE(distinct.size(), 256u) << r.ties;  // a pool of N/4 values
      if (r.ties == "all_equal") EXPECT_EQ(distinct.size(), 1u);
      if (r.ties == "sorted_runs")
        for (size_t i = 1; i < k.size(); ++i) ASSERT_LE(k[i - 1], k[i]) << i;
      if (r.ties == "reverse_runs")
        for (size_t i = 1; i < k.size(); ++i) ASSERT_GE(k[i - 1], k[i]) << i;
      bool pos = false, neg = false;
      for (double v : k) pos = pos || (v == 0 && !std::signbit(v)), neg = neg || (v == 0 && std::signbit(v));
      signed_zeros = signed_zeros || (pos && neg);
      // Replay: the recipe round-trips through JSON to the same bytes.
      Case back;
      ASSERT_TRUE(case_from_json(case_to_json(c), &back, &error)) << error;
      EXPECT_TRUE(at::equal(materialize(back.tensors[0]), materialize(r)));
      // The scaled distributions stay scaled: tied values are the distribution's own.
      if (d == Distribution::Small && r.ties != "all_equal")
        for (double v : k) ASSERT_LT(std::fabs(v), 0.1);
    }
  }
  EXPECT_EQ(seen, (std::set<std::string>{"uniform", "zipf", "all_equal", "sorted_runs", "reverse_runs"}));
  EXPECT_TRUE(signed_zeros) << "+0.0 and -0.0 side by side in some case";
  Case kb;
  std::string error;
  ASSERT_TRUE(space.fixed_case(DType::Float32, Distribution::Uniform01, 7, &kb, &error)) << error;
  EXPECT_TRUE(kb.tensors[0].ties.empty());
  const std::vector<double> u = doubles(materialize(kb.tensors[0]));
  EXPECT_EQ(std::set<double>(u.begin(), u.end()).size(), u.size()) << "U[0,1) float32 keys do not tie";
}

// filter's threshold is one of x's own values, so every distribution keeps some and drops some;
// recipe_value agrees with the materialized tensor; a manifest that fixes the threshold wins.
TEST(DrawnAttributes, FilterThresholdLiesInsideTheData) {
  const OpSchema s = load("filter");
  KernelManifest m;
  CaseSpace space(s, m);
  for (uint64_t seed = 1; seed <= 20; ++seed)
    for (Distribution d : accuracy_distributions()) {
      Case c;
      std::string error;
      ASSERT_TRUE(space.build({{"N", 1000}}, 0, {{"threshold", 0.0}}, DType::BFloat16, d, seed, &c, &error)) << error;
      const std::vector<double> x = doubles(materialize(c.tensors[0]));
      const double t = std::get<double>(c.attrs.at("threshold"));
      EXPECT_NE(std::find(x.begin(), x.end(), t), x.end()) << distribution_name(d) << " seed " << seed;
      int64_t kept = 0;
      for (double v : x) kept += v > t;
      EXPECT_LT(kept, 1000) << "the element equal to the threshold is dropped";
      for (int64_t i : {int64_t(0), int64_t(17), int64_t(999)}) EXPECT_EQ(recipe_value(c.tensors[0], i), x[size_t(i)]);
      EXPECT_NE(c.label.find("threshold="), std::string::npos);
    }
  // Specials count (a NaN placed at index 3 is what index 3 holds).
  TensorRecipe r;
  r.shape = {8};
  r.specials = {{3, NAN}};
  EXPECT_TRUE(std::isnan(recipe_value(r, 3)));
  // Fixed by the manifest: not drawn. Empty x: the default stays.
  KernelManifest fixed;
  fixed.attrs["threshold"] = 0.25;
  CaseSpace narrowed(s, fixed);
  Case c;
  std::string error;
  ASSERT_TRUE(narrowed.build({{"N", 100}}, 0, {{"threshold", 0.25}}, DType::Float32, Distribution::Normal, 3, &c, &error));
  EXPECT_EQ(std::get<double>(c.attrs.at("threshold")), 0.25);
  ASSERT_TRUE(space.build({{"N", 0}}, 0, {{"threshold", 0.0}}, DType::Float32, Distribution::Normal, 3, &c, &error));
  EXPECT_EQ(std::get<double>(c.attrs.at("threshold")), 0.0);
}

// Lint: ties only on real-valued kinds with known spreads (zipf needs alpha); drawn_from only on a
// double attribute naming a floating real input, without min/max/values.
TEST(DrawnAttributes, LintRefusesMisuse) {
  OpSchema s = load("sort");
  EXPECT_TRUE(lint_schema(s, {}).empty());
  OpSchema bad = s;
  bad.inputs[0].values.ties.push_back("zipfian");
  bad.inputs[1].values.ties = {"uniform"};
  const auto issues = lint_schema(bad, {});
  std::string all;
  for (const auto& i : issues) all += i.field + ": " + i.message + "\n";
  EXPECT_NE(all.find("/inputs/0/values/ties/5"), std::string::npos) << all;
  EXPECT_NE(all.find("/inputs/1/values/ties"), std::string::npos) << all;
  OpSchema no_alpha = s;
  no_alpha.inputs[0].values.alpha.reset();
  EXPECT_FALSE(lint_schema(no_alpha, {}).empty());
  OpSchema f = load("filter");
  EXPECT_TRUE(lint_schema(f, {}).empty());
  f.attributes[0].drawn_from = "nope";
  f.attributes[0].max = 1.0;
  std::string fa;
  for (const auto& i : lint_schema(f, {})) fa += i.field + ": " + i.message + "\n";
  EXPECT_NE(fa.find("unknown input \"nope\""), std::string::npos) << fa;
  EXPECT_NE(fa.find("no min, max or values"), std::string::npos) << fa;
}

// int64 outputs are compared as integers whatever the tolerance mode, and a wrong one fails.
TEST(IntegerOutputs, JudgedExactly) {
  Tolerance ulp;
  ulp.mode = "ulp";
  ulp.ulps = 4;
  const at::Tensor want = at::tensor(std::vector<int64_t>{3, 1, 2, 0}, at::kLong);
  Judgement ok = judge_output("v", want.clone(), want.to(at::kDouble), at::Tensor(), DType::Int64, ulp, 1);
  EXPECT_TRUE(ok.pass) << ok.message;
  EXPECT_FALSE(ok.vacuous);
  const at::Tensor swapped = at::tensor(std::vector<int64_t>{3, 2, 1, 0}, at::kLong);
  Judgement bad = judge_output("v", swapped, want.to(at::kDouble), at::Tensor(), DType::Int64, ulp, 1);
  EXPECT_FALSE(bad.pass);
  EXPECT_EQ(bad.bad, 2);
  EXPECT_NE(bad.message.find("exact"), std::string::npos) << bad.message;
  // A data-dependent length unlike the oracle's is a failure with the counts.
  Judgement shorter = judge_output("y", at::zeros({2}, at::kFloat), at::ones({3}, at::kDouble), at::Tensor(),
                                   DType::Float32, ulp, 1);
  EXPECT_FALSE(shorter.pass);
  EXPECT_NE(shorter.message.find("2 elements, expected 3"), std::string::npos) << shorter.message;
}

}  // namespace
}  // namespace gauntlet
