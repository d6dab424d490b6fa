// Integer value spreads (integer_spread.h): skewed keys and segment offsets, their replay, and the schema's value kinds.
#include "gauntlet/cases/integer_spread.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "gauntlet/cases/case.h"
#include "gauntlet/schema/schema.h"

namespace gauntlet {
namespace {

std::map<int64_t, int64_t> counts(const std::vector<int64_t>& v) {
  std::map<int64_t, int64_t> c;
  for (int64_t x : v) ++c[x];
  return c;
}

int64_t hottest(const std::vector<int64_t>& v) {
  int64_t best = 0;
  for (const auto& [key, n] : counts(v)) best = std::max(best, n);
  return best;
}

void expect_in_range(const std::vector<int64_t>& v, int64_t low, int64_t high) {
  for (int64_t x : v) {
    ASSERT_GE(x, low);
    ASSERT_LT(x, high);
  }
}

TEST(IntegerSpread, NamesRoundTripAndUnknownNamesAreRefused) {
  for (Spread s : {Spread::Uniform, Spread::Zipf, Spread::AllEqual, Spread::AllDistinct, Spread::SortedRuns})
    EXPECT_EQ(spread_from_name(spread_name(s)), s);
  EXPECT_EQ(spread_from_name(""), Spread::Uniform);
  EXPECT_FALSE(spread_from_name("zipfian"));
}

// The same seed gives the same keys; another stream gives others.
TEST(IntegerSpread, KeysAreAPureFunctionOfSeedAndStream) {
  for (Spread s : {Spread::Uniform, Spread::Zipf, Spread::AllDistinct, Spread::SortedRuns}) {
    const auto a = draw_keys(5000, -50, 950, s, 1.1, false, 7, 3);
    EXPECT_EQ(a, draw_keys(5000, -50, 950, s, 1.1, false, 7, 3)) << spread_name(s);
    EXPECT_NE(a, draw_keys(5000, -50, 950, s, 1.1, false, 7, 4)) << spread_name(s);
    expect_in_range(a, -50, 950);
  }
}

// Zipf keys put a large share on one hot key, where uniform keys over the same range stay near
// the mean: 20,000 keys over 1,000 values, the mean count 20.
TEST(IntegerSpread, ZipfKeysHaveAHotKeyUniformKeysDoNot) {
  const auto zipf = draw_keys(20000, 0, 1000, Spread::Zipf, 1.2, false, 11, 0);
  const auto uniform = draw_keys(20000, 0, 1000, Spread::Uniform, 0, false, 11, 0);
  expect_in_range(zipf, 0, 1000);
  EXPECT_GE(hottest(zipf), 3000) << "about a quarter of the keys should be the hottest one";
  EXPECT_LE(hottest(uniform), 60);
  EXPECT_LT(counts(zipf).size(), counts(uniform).size()) << "the tail of a Zipf draw leaves keys unused";
}

TEST(IntegerSpread, AllEqualKeysAreOneKeyInRange) {
  const auto v = draw_keys(777, 10, 20, Spread::AllEqual, 0, false, 3, 1);
  ASSERT_EQ(v.size(), 777u);
  EXPECT_EQ(counts(v).size(), 1u);
  expect_in_range(v, 10, 20);
}

// No key twice while the range has enough; past that, every key as often as the others (+-1).
TEST(IntegerSpread, AllDistinctKeysRepeatOnlyWhenTheRangeIsTooSmall) {
  const auto v = draw_keys(1000, 0, 1000, Spread::AllDistinct, 0, false, 5, 2);
  EXPECT_EQ(counts(v).size(), 1000u);
  const auto w = draw_keys(1000, 0, 300, Spread::AllDistinct, 0, false, 5, 2);
  for (const auto& [key, n] : counts(w)) {
    EXPECT_GE(n, 3);
    EXPECT_LE(n, 4);
  }
}

TEST(IntegerSpread, SortedRunsAscendWithRepeats) {
  const auto v = draw_keys(2000, 0, 1000, Spread::SortedRuns, 0, false, 9, 0);
  expect_in_range(v, 0, 1000);
  EXPECT_TRUE(std::is_sorted(v.begin(), v.end()));
  int repeats = 0;
  for (size_t i = 1; i < v.size(); ++i) repeats += v[i] == v[i - 1];
  EXPECT_GT(repeats, 500) << "runs of equal keys";
  EXPECT_GT(counts(v).size(), 50u) << "and many runs";
}

TEST(IntegerSpread, SortedKeysKeepTheirSpread) {
  const auto v = draw_keys(4000, 0, 500, Spread::Zipf, 1.5, true, 1, 1);
  EXPECT_TRUE(std::is_sorted(v.begin(), v.end()));
  auto unsorted = draw_keys(4000, 0, 500, Spread::Zipf, 1.5, false, 1, 1);
  std::sort(unsorted.begin(), unsorted.end());
  EXPECT_EQ(v, unsorted);
}

std::vector<int64_t> lengths(const std::vector<int64_t>& offsets) {
  std::vector<int64_t> len;
  for (size_t i = 1; i < offsets.size(); ++i) len.push_back(offsets[i] - offsets[i - 1]);
  return len;
}

void expect_offsets(const std::vector<int64_t>& o, int64_t count, int64_t total) {
  ASSERT_EQ(int64_t(o.size()), count);
  EXPECT_EQ(o.front(), 0);
  EXPECT_EQ(o.back(), total);
  EXPECT_TRUE(std::is_sorted(o.begin(), o.end()));
}

TEST(IntegerSpread, OffsetsRunFromZeroToTheTotalWithTheirSpread) {
  for (Spread s : {Spread::Uniform, Spread::Zipf, Spread::AllEqual, Spread::AllDistinct, Spread::SortedRuns})
    expect_offsets(draw_offsets(101, 1000, s, 1.2, 4, 0), 101, 1000);
  const auto one = lengths(draw_offsets(101, 1000, Spread::AllEqual, 0, 4, 0));
  EXPECT_EQ(std::count(one.begin(), one.end(), 0), 99) << "one segment holds everything";
  const auto even = lengths(draw_offsets(8, 1001, Spread::AllDistinct, 0, 4, 0));
  EXPECT_LE(*std::max_element(even.begin(), even.end()) - *std::min_element(even.begin(), even.end()), 1);
  const auto zipf = lengths(draw_offsets(101, 1000, Spread::Zipf, 1.2, 4, 0));
  EXPECT_GE(std::count(zipf.begin(), zipf.end(), 0), 50) << "most Zipf segments are empty";
  EXPECT_GE(*std::max_element(zipf.begin(), zipf.end()), 250) << "and a few are huge";
  EXPECT_EQ(draw_offsets(1, 0, Spread::Uniform, 0, 4, 0), std::vector<int64_t>{0});
  expect_offsets(draw_offsets(5, 0, Spread::Zipf, 1, 4, 0), 5, 0);
}

// A recipe's spread travels in the replay file: the case read back draws the same bytes.
TEST(IntegerSpread, ARecipesSpreadSurvivesTheReplayFile) {
  Case c;
  c.dims = {{"N", 3000}};
  TensorRecipe keys;
  keys.name = "keys";
  keys.dtype = DType::Int64;
  keys.shape = {3000};
  keys.distribution = Distribution::Index;
  keys.low = 0;
  keys.high = 64;
  keys.spread = Spread::Zipf;
  keys.alpha = 1.3;
  keys.sorted = true;
  keys.seed = 99;
  TensorRecipe offsets = keys;
  offsets.name = "offsets";
  offsets.shape = {17};
  offsets.offsets = true;
  offsets.sorted = false;
  offsets.high = 3000;
  offsets.spread = Spread::AllEqual;
  c.tensors = {keys, offsets};
  Case back;
  std::string error;
  ASSERT_TRUE(case_from_json(case_to_json(c), &back, &error)) << error;
  ASSERT_EQ(back.tensors.size(), 2u);
  for (size_t i = 0; i < 2; ++i)
    EXPECT_TRUE(at::equal(materialize(c.tensors[i]), materialize(back.tensors[i]))) << c.tensors[i].name;
  const at::Tensor o = materialize(back.tensors[1]);
  EXPECT_EQ(o[0].item<int64_t>(), 0);
  EXPECT_EQ(o[16].item<int64_t>(), 3000);
  nlohmann::json bad = case_to_json(c);
  bad["tensors"][0]["spread"] = "zipfian";
  EXPECT_FALSE(case_from_json(bad, &back, &error));
  EXPECT_NE(error.find("zipfian"), std::string::npos) << error;
}

// A schema's key, bool and offsets value domains reach the recipes (a group-by-like schema).
TEST(IntegerSpread, SchemaValueKindsBecomeRecipes) {
  OpSchema s;
  s.name = "grouped_test";
  auto dim = [&](const char* name, int64_t typical) {
    DimDomain d;
    d.min = 1;
    d.max = 4096;
    d.typical = {typical};
    s.dims[name] = d;
  };
  dim("N", 1000);
  dim("G", 16);
  dim("S", 8);
  auto input = [&](const char* name, std::vector<std::string> shape, DType dtype, ValueDomain v) {
    InputSpec in;
    in.name = name;
    in.shapes = {shape};
    in.dtypes = {dtype};
    in.values = v;
    s.inputs.push_back(in);
  };
  input("vals", {"N"}, DType::Float32, ValueDomain{});
  ValueDomain key;
  key.kind = "key";
  key.below = "G";
  key.distribution = "zipf";
  key.alpha = 1.2;
  input("keys", {"N"}, DType::Int64, key);
  ValueDomain mask;
  mask.kind = "bool";
  input("mask", {"N"}, DType::Bool, mask);
  ValueDomain offsets;
  offsets.kind = "offsets";
  offsets.total = "N";
  offsets.distribution = "all_equal";
  input("offsets", {"S + 1"}, DType::Int64, offsets);
  KernelManifest m;
  CaseSpace space(s, m);
  Case c;
  std::string error;
  ASSERT_TRUE(space.typical_case(0, DType::Float32, Distribution::Normal, 21, &c, &error)) << error;
  ASSERT_EQ(c.tensors.size(), 4u);
  const TensorRecipe& keys = c.tensors[1];
  EXPECT_EQ(keys.spread, Spread::Zipf);
  EXPECT_DOUBLE_EQ(keys.alpha, 1.2);
  EXPECT_EQ(keys.high, 16);
  const at::Tensor k = materialize(keys);
  EXPECT_GE(k.min().item<int64_t>(), 0);
  EXPECT_LT(k.max().item<int64_t>(), 16);
  const at::Tensor bits = materialize(c.tensors[2]);
  EXPECT_EQ(bits.scalar_type(), at::kBool);
  EXPECT_GT(bits.sum().item<int64_t>(), 0);
  EXPECT_LT(bits.sum().item<int64_t>(), 1000);
  const at::Tensor o = materialize(c.tensors[3]);
  ASSERT_EQ(o.numel(), 9);
  EXPECT_EQ(o[0].item<int64_t>(), 0);
  EXPECT_EQ(o[8].item<int64_t>(), 1000);
  EXPECT_EQ((o.slice(0, 1) - o.slice(0, 0, 8)).gt(0).sum().item<int64_t>(), 1) << "all_equal: one segment";
}

// group_by_sum's schema: num_groups follows dim G (size_of) whatever the caller passes, the keys
// stay below it, and across seeds the keys take every distribution of [distribution, also...]
// (zipf and the other skews), each recorded in the recipe.
TEST(IntegerSpread, SizeOfAttributesFollowTheirDimAndAlsoRotatesTheKeys) {
  std::vector<SchemaIssue> issues;
  auto s = load_schema_file(std::string(GAUNTLET_SOURCE_DIR) + "/opschemas/group_by_sum.json", &issues);
  ASSERT_TRUE(s);
  KernelManifest m;
  CaseSpace space(*s, m);
  std::set<Spread> seen;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    Case c;
    std::string error;
    ASSERT_TRUE(space.build({{"N", 200}, {"G", 7}}, 0, {{"num_groups", AttrValue(int64_t(64))}}, DType::Float32,
                            Distribution::Normal, seed, &c, &error))
        << error;
    EXPECT_EQ(std::get<int64_t>(c.attrs.at("num_groups")), 7) << "num_groups is G";
    const TensorRecipe& keys = c.tensors.at(0);
    EXPECT_EQ(keys.high, 7);
    const at::Tensor k = materialize(keys);
    EXPECT_GE(k.min().item<int64_t>(), 0);
    EXPECT_LT(k.max().item<int64_t>(), 7);
    if (keys.spread == Spread::AllEqual) EXPECT_EQ(k.min().item<int64_t>(), k.max().item<int64_t>());
    seen.insert(keys.spread);
    // The case dtype is the values', not the keys' int64.
    EXPECT_EQ(case_dtype(*s, c), DType::Float32);
  }
  EXPECT_EQ(seen, (std::set<Spread>{Spread::Zipf, Spread::AllEqual, Spread::AllDistinct, Spread::SortedRuns,
                                    Spread::Uniform}));
}

}  // namespace
}  // namespace gauntlet

namespace gauntlet {
namespace {

// The accumulation gate's arithmetic integers at the ends of their range: only low and high - 1, each
// about half the time (int8_matmul's -128 and 127, whose products overflow a 16-bit partial sum).
TEST(IntegerSpread, ExtremesAreTheRangesEndsAboutEquallyOften) {
  EXPECT_EQ(spread_from_name("extremes"), Spread::Extremes);
  EXPECT_STREQ(spread_name(Spread::Extremes), "extremes");
  const std::vector<int64_t> v = draw_keys(4096, -128, 128, Spread::Extremes, 0, false, 5, 1);
  int64_t low = 0;
  for (int64_t x : v) {
    ASSERT_TRUE(x == -128 || x == 127) << x;
    low += x == -128;
  }
  EXPECT_GT(low, 1800);
  EXPECT_LT(low, 2300);
  EXPECT_EQ(v, draw_keys(4096, -128, 128, Spread::Extremes, 0, false, 5, 1));
}

// int64_limits: the ends of int64 (each of the four about a sixteenth of the keys), the rest in
// [low, high); the sentinels a kernel might keep for itself meet real keys.
TEST(IntegerSpread, Int64LimitsPutAQuarterOfTheKeysAtTheEndsOfInt64) {
  EXPECT_EQ(spread_from_name("int64_limits"), Spread::Int64Limits);
  EXPECT_STREQ(spread_name(Spread::Int64Limits), "int64_limits");
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();
  const std::vector<int64_t> v = draw_keys(8192, -16, 16, Spread::Int64Limits, 0, false, 3, 0);
  const auto c = counts(v);
  int64_t in_range = 0;
  for (int64_t x : v) in_range += x >= -16 && x < 16;
  for (int64_t end : {kMin, kMin + 1, kMax - 1, kMax}) {
    ASSERT_TRUE(c.count(end)) << end;
    EXPECT_GT(c.at(end), 8192 / 16 - 150) << end;
    EXPECT_LT(c.at(end), 8192 / 16 + 150) << end;
  }
  EXPECT_EQ(in_range + c.at(kMin) + c.at(kMin + 1) + c.at(kMax - 1) + c.at(kMax), 8192);
  EXPECT_EQ(v, draw_keys(8192, -16, 16, Spread::Int64Limits, 0, false, 3, 0));
  // Through unique's schema: keys in [-R, R), one case in seven (by its seed) at the ends of int64,
  // which materialize writes as they are (the span of [-R, R) at R = 2^61 still fits in int64).
  std::vector<SchemaIssue> issues;
  auto schema = load_schema_file(std::string(GAUNTLET_SOURCE_DIR) + "/opschemas/unique.json", &issues);
  ASSERT_TRUE(schema);
  KernelManifest m;
  CaseSpace space(*schema, m);
  std::set<Spread> seen;
  for (uint64_t seed = 1; seed <= 80; ++seed) {
    Case c;
    std::string error;
    ASSERT_TRUE(space.build({{"N", 4096}, {"R", int64_t(1) << 61}}, 0, {}, DType::Int64, Distribution::Normal, seed, &c, &error))
        << error;
    const TensorRecipe& x = c.tensors.at(0);
    seen.insert(x.spread);
    const at::Tensor k = materialize(x);
    if (x.spread == Spread::Int64Limits) {
      EXPECT_EQ(k.min().item<int64_t>(), kMin);
      EXPECT_EQ(k.max().item<int64_t>(), kMax);
    } else {
      EXPECT_GE(k.min().item<int64_t>(), -(int64_t(1) << 61));
      EXPECT_LT(k.max().item<int64_t>(), int64_t(1) << 61);
    }
  }
  EXPECT_TRUE(seen.count(Spread::Int64Limits));
  EXPECT_EQ(seen.size(), 6u) << "zipf, all_equal, all_distinct, sorted_runs, uniform, int64_limits";
}
}  // namespace
}  // namespace gauntlet
