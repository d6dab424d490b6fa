// Tests of cases: deterministic materialization, exact dtype rounding, replay JSON round trip.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>

#include "gauntlet/build/builder.h"
#include "gauntlet/cases/case.h"
#include "gauntlet/common/numerics.h"

using namespace gauntlet;

namespace {

TensorRecipe recipe(DType dt, Distribution dist, std::vector<int64_t> shape) {
  TensorRecipe r;
  r.name = "x";
  r.dtype = dt;
  r.distribution = dist;
  r.shape = shape;
  r.seed = 0xC0FFEE;
  r.stream = 0;
  return r;
}

// The values of every distribution are fixed forever: a replay file holds a case's recipe, not its
// tensors, so any change to the generator (or to how a distribution draws from it) would replay
// other inputs. Digests of float64 tensors of 5000 elements, seed 0xC0FFEE, recorded once.
TEST(Case, EveryDistributionDrawsTheValuesItAlwaysDrew) {
  const std::vector<std::pair<const char*, const char*>> golden = {
      {"normal", "f09cf7aec4cf0d6f"},
      {"uniform", "84ec8c680bd12818"},
      {"small", "ddea6e28a3d0dc75"},
      {"large", "16ddcf50a6a87be8"},
      {"one-signed", "2909d113f1e45f76"},
      {"heavy-tailed", "1a5b5911499ff779"},
      {"outliers", "db5fb06e41cf534c"},
      {"uniform01", "f8b1077234cfb28e"},
      {"index", "75d1f7d0241492fa"},
      {"subnormal", "d1ce9019cf2c1b3a"},
      {"near-max", "0b007cb63d116c9f"},
      {"near-min-normal", "e0e6e65b81857370"},
      {"large-logits", "5b2a5fe0b2ccbca6"},
      {"tiny-spread", "71a93687e6fd7718"},
      {"swamp", "6622c40892bb375e"},
      {"cancellation", "cbfd063b75384245"},
      {"partial-overflow", "29608060abe46a65"},
      {"integer-exact", "7395e4ad834b97dd"},
      {"near-equal", "5596fcbd28bf04aa"},
      {"large-mean", "6600e844a84a9abc"},
      {"near-one", "cc10349e219b7a91"},
      {"small-integers", "161d330f04486457"},
  };
  for (const auto& [name, digest] : golden) {
    Distribution dist;
    ASSERT_TRUE(distribution_from_name(name, &dist)) << name;
    TensorRecipe r = recipe(DType::Float64, dist, {50, 100});
    if (dist == Distribution::Index) r.high = 1000;
    const at::Tensor t = materialize(r).contiguous();
    const std::string bytes(static_cast<const char*>(t.data_ptr()), size_t(t.numel()) * t.element_size());
    EXPECT_EQ(sha256_hex(bytes).substr(0, 16), digest) << name;
  }
}

// float32 tensors are drawn straight into float32 (no float64 staging buffer): the bits are those
// of the float64 tensor of the same recipe converted by ATen, specials (NaN, infinities, -0)
// included, across every parallel chunk.
TEST(Case, Float32IsTheFloat64RecipeConvertedBitForBit) {
  const double inf = std::numeric_limits<double>::infinity();
  for (Distribution dist : accuracy_distributions()) {
    TensorRecipe wide = recipe(DType::Float64, dist, {3, 70001});
    wide.specials = {{0, std::nan("")}, {5, -0.0}, {70000, inf}, {150000, -inf}, {210002, 1e300}};
    TensorRecipe narrow = wide;
    narrow.dtype = DType::Float32;
    const at::Tensor expected = materialize(wide).to(at::kFloat);
    const at::Tensor got = materialize(narrow);
    ASSERT_EQ(got.scalar_type(), at::kFloat);
    ASSERT_TRUE(got.is_contiguous());
    const at::Tensor a = expected.view(at::kInt), b = got.view(at::kInt);
    EXPECT_TRUE(at::equal(a, b)) << distribution_name(dist);
  }
}

TEST(Case, MaterializeIsAPureFunctionOfTheRecipe) {
  for (Distribution dist : accuracy_distributions()) {
    TensorRecipe r = recipe(DType::BFloat16, dist, {7, 33});
    at::Tensor a = materialize(r), b = materialize(r);
    EXPECT_TRUE(at::equal(a, b)) << distribution_name(dist);
    EXPECT_EQ(a.scalar_type(), at::kBFloat16);
    r.seed += 1;
    EXPECT_FALSE(at::equal(a, materialize(r))) << distribution_name(dist);
  }
}

TEST(Case, DistributionsHaveTheirShape) {
  at::Tensor small = materialize(recipe(DType::Float32, Distribution::Small, {10000})).to(at::kDouble);
  at::Tensor large = materialize(recipe(DType::Float32, Distribution::Large, {10000})).to(at::kDouble);
  at::Tensor pos = materialize(recipe(DType::Float32, Distribution::OneSigned, {10000}));
  at::Tensor u01 = materialize(recipe(DType::Float32, Distribution::Uniform01, {10000}));
  EXPECT_NEAR(small.std().item<double>(), 1e-3, 1e-4);
  EXPECT_NEAR(large.std().item<double>(), 1e3, 1e2);
  EXPECT_GE(pos.min().item<float>(), 0.0f);
  EXPECT_GE(u01.min().item<float>(), 0.0f);
  EXPECT_LT(u01.max().item<float>(), 1.0f);
  at::Tensor outliers = materialize(recipe(DType::Float32, Distribution::Outliers, {10000}));
  EXPECT_GT(outliers.abs().max().item<float>(), 100.0f);
}

TEST(Case, IndexRecipesStayInRange) {
  TensorRecipe r = recipe(DType::Int64, Distribution::Index, {1000});
  r.low = 3;
  r.high = 17;
  at::Tensor t = materialize(r);
  EXPECT_EQ(t.scalar_type(), at::kLong);
  EXPECT_GE(t.min().item<int64_t>(), 3);
  EXPECT_LT(t.max().item<int64_t>(), 17);
}

TEST(Case, PinnedIndicesArePlacedAndKeptInRange) {
  TensorRecipe r = recipe(DType::Int64, Distribution::Index, {50});
  r.low = 2;
  r.high = 9;
  const at::Tensor base = materialize(r);
  r.specials = {{3, 7.0}, {10, 100.0}, {11, -5.0}};
  const at::Tensor pinned = materialize(r);
  EXPECT_EQ(pinned[3].item<int64_t>(), 7);
  EXPECT_EQ(pinned[10].item<int64_t>(), 8);  // clamped into [low, high)
  EXPECT_EQ(pinned[11].item<int64_t>(), 2);
  at::Tensor rest = pinned.clone();
  for (int64_t i : {3, 10, 11}) rest[i] = base[i];
  EXPECT_TRUE(at::equal(rest, base)) << "only the pinned positions change";
}

TEST(Case, PinnedDigestOfAFixedRecipe) {
  // Changing the generator, the distributions or the rounding changes every replay file: this
  // digest pins them.
  at::Tensor t = materialize(recipe(DType::Float16, Distribution::Normal, {4, 5}));
  std::string digest = inputs_digest({t});
  EXPECT_EQ(digest.size(), 64u);
  EXPECT_EQ(digest, inputs_digest({materialize(recipe(DType::Float16, Distribution::Normal, {4, 5}))}));
  const float first = t.reshape({-1})[0].item<float>();
  EXPECT_EQ(double(first), num::round_to(DType::Float16, double(first)));
}

TEST(Case, JsonRoundTrip) {
  Case c;
  c.index = 5;
  c.label = "float16 normal x=[4,5] dim=-1";
  c.dims = {{"M", 4}, {"N", 5}};
  c.tensors = {recipe(DType::Float16, Distribution::HeavyTailed, {4, 5})};
  TensorRecipe idx = recipe(DType::Int64, Distribution::Index, {9});
  idx.name = "idx";
  idx.low = 0;
  idx.high = 11;
  c.tensors.push_back(idx);
  c.attrs = {{"dim", int64_t(-1)}, {"eps", 1e-5}, {"causal", true}};
  Case back;
  std::string error;
  ASSERT_TRUE(case_from_json(case_to_json(c), &back, &error)) << error;
  EXPECT_EQ(back.index, c.index);
  EXPECT_EQ(back.dims, c.dims);
  EXPECT_EQ(back.attrs, c.attrs);
  ASSERT_EQ(back.tensors.size(), 2u);
  EXPECT_TRUE(at::equal(materialize(back.tensors[0]), materialize(c.tensors[0])));
  EXPECT_TRUE(at::equal(materialize(back.tensors[1]), materialize(c.tensors[1])));
}

TEST(Case, CorruptJsonIsAnErrorNotACrash) {
  Case c;
  std::string error;
  EXPECT_FALSE(case_from_json(nlohmann::json::parse(R"({"index": 1})"), &c, &error));
  EXPECT_FALSE(error.empty());
  nlohmann::json j = case_to_json(Case{});
  j["generator"] = "mt19937";
  EXPECT_FALSE(case_from_json(j, &c, &error));
}

}  // namespace

namespace {

TEST(Case, LayoutsKeepTheLogicalValues) {
  TensorRecipe r = recipe(DType::Float32, Distribution::Normal, {2, 3, 4, 5});
  at::Tensor base = materialize(r);
  for (const char* layout : {"transposed", "strided", "offset", "channels_last"}) {
    r.layout = layout;
    at::Tensor t = materialize(r);
    EXPECT_TRUE(at::equal(t, base)) << layout;
    if (std::string(layout) != "offset") EXPECT_FALSE(t.is_contiguous()) << layout;
  }
  r.layout = "offset";
  EXPECT_GT(materialize(r).storage_offset(), 0);
  r.layout = "strided";
  EXPECT_EQ(materialize(r).stride(3), 2);
  r.layout = "expanded";
  at::Tensor e = materialize(r);
  EXPECT_EQ(e.stride(0), 0);
  EXPECT_TRUE(at::equal(e[1], e[0]));
}

TEST(Case, SpecialValuesArePlacedAndSurviveJson) {
  Case c;
  TensorRecipe r = recipe(DType::BFloat16, Distribution::Normal, {3, 4});
  r.specials = {{0, NAN}, {5, INFINITY}, {11, -INFINITY}, {7, 1e-40}};
  c.tensors = {r};
  at::Tensor t = materialize(r).to(at::kDouble).reshape({-1});
  EXPECT_TRUE(std::isnan(t[0].item<double>()));
  EXPECT_EQ(t[5].item<double>(), INFINITY);
  EXPECT_EQ(t[11].item<double>(), -INFINITY);
  Case back;
  std::string error;
  ASSERT_TRUE(case_from_json(nlohmann::json::parse(case_to_json(c).dump()), &back, &error)) << error;
  EXPECT_TRUE(at::equal(materialize(back.tensors[0]).isnan(), materialize(r).isnan()));
  EXPECT_EQ(back.tensors[0].specials.size(), 4u);
}

TEST(Case, EdgeDistributionsStayInTheirRange) {
  for (DType dt : {DType::Float32, DType::Float16, DType::BFloat16}) {
    const num::DTypeLimits lim = num::limits(dt);
    at::Tensor sub = materialize(recipe(dt, Distribution::Subnormal, {1000})).to(at::kDouble).abs();
    EXPECT_LT(sub.max().item<double>(), lim.min_normal) << dtype_name(dt);
    EXPECT_GT(sub.max().item<double>(), 0.0) << dtype_name(dt);
    at::Tensor big = materialize(recipe(dt, Distribution::NearMax, {1000})).to(at::kDouble).abs();
    EXPECT_LE(big.max().item<double>(), lim.max_finite) << dtype_name(dt);
    EXPECT_GE(big.min().item<double>(), lim.max_finite / 4 * 0.99) << dtype_name(dt);
  }
}

// A structure projects the drawn values exactly (kept or zeroed, a symmetric matrix mirrors its
// lower triangle), holds in every layout, survives the replay JSON, and leaves the other entries
// the dense draw's own (so a replay file from before still draws the same stream).
TEST(Case, StructuresProjectTheDrawAndSurviveJsonAndLayouts) {
  TensorRecipe r = recipe(DType::Float32, Distribution::Normal, {2, 5, 5});
  const at::Tensor dense = materialize(r);
  const std::map<std::string, at::Tensor> expected = {
      {"lower-triangular", dense.tril()},
      {"upper-triangular", dense.triu()},
      {"diagonal", dense.tril().triu()},
      {"symmetric", dense.tril() + dense.tril(-1).transpose(-2, -1)}};
  for (const auto& [structure, want] : expected) {
    r.structure = structure;
    r.layout = "contiguous";
    const at::Tensor t = materialize(r);
    EXPECT_TRUE(at::equal(t, want)) << structure;
    EXPECT_TRUE(at::equal(t.tril(), t) || structure != "lower-triangular");
    if (structure == "symmetric") EXPECT_TRUE(at::equal(t, t.transpose(-2, -1)));
    for (const char* layout : {"transposed", "strided", "offset", "expanded"}) {
      r.layout = layout;
      at::Tensor laid = materialize(r);
      if (std::string(layout) != "expanded") EXPECT_TRUE(at::equal(laid, want)) << structure << " " << layout;
      else EXPECT_TRUE(at::equal(laid[1], want[0])) << structure;  // each batch element keeps it
    }
    Case c;
    r.layout = "contiguous";
    c.tensors = {r};
    Case back;
    std::string error;
    ASSERT_TRUE(case_from_json(nlohmann::json::parse(case_to_json(c).dump()), &back, &error)) << error;
    EXPECT_EQ(back.tensors[0].structure, structure);
    EXPECT_TRUE(at::equal(materialize(back.tensors[0]), want)) << structure;
  }
  // Vectors, and a symmetric structure on a non-square matrix (a shape outside any contract that
  // promises it), are left as drawn.
  TensorRecipe v = recipe(DType::Float32, Distribution::Normal, {6});
  const at::Tensor vd = materialize(v);
  v.structure = "lower-triangular";
  EXPECT_TRUE(at::equal(materialize(v), vd));
  TensorRecipe wide = recipe(DType::Float32, Distribution::Normal, {3, 4});
  const at::Tensor wd = materialize(wide);
  wide.structure = "symmetric";
  EXPECT_TRUE(at::equal(materialize(wide), wd));
  wide.structure = "upper-triangular";
  EXPECT_TRUE(at::equal(materialize(wide), wd.triu()));
  // structure_keeps names exactly the elements the projection keeps as drawn.
  for (const char* structure : {"lower-triangular", "upper-triangular", "diagonal", "symmetric"})
    for (std::vector<int64_t> shape : {std::vector<int64_t>{2, 4, 4}, std::vector<int64_t>{3, 5}}) {
      TensorRecipe k = recipe(DType::Float64, Distribution::Normal, shape);
      const at::Tensor drawn = materialize(k).reshape({-1});
      k.structure = structure;
      const at::Tensor projected = materialize(k).reshape({-1});
      for (int64_t f = 0; f < drawn.numel(); ++f)
        EXPECT_EQ(structure_keeps(k, f), projected[f].item<double>() == drawn[f].item<double>())
            << structure << " " << f;
    }
  // structure_position moves a zeroed position to one the structure keeps, in the same matrix.
  for (const char* structure : {"lower-triangular", "upper-triangular", "diagonal", "symmetric"})
    for (std::vector<int64_t> shape : {std::vector<int64_t>{2, 4, 4}, std::vector<int64_t>{3, 5}, std::vector<int64_t>{5, 3}}) {
      TensorRecipe k = recipe(DType::Float32, Distribution::Normal, shape);
      k.structure = structure;
      const int64_t matrix = shape[shape.size() - 1] * shape[shape.size() - 2];
      for (int64_t f = 0; f < matrix * (shape.size() == 3 ? 2 : 1); ++f) {
        const int64_t moved = structure_position(k, f);
        EXPECT_TRUE(structure_keeps(k, moved)) << structure << " " << f << " -> " << moved;
        EXPECT_EQ(moved / matrix, f / matrix) << structure << " " << f;
        if (structure_keeps(k, f)) EXPECT_EQ(moved, f);
      }
    }
  // Specials on a structural zero vanish; on the kept triangle they stay.
  TensorRecipe sp = recipe(DType::Float32, Distribution::Normal, {3, 3});
  sp.structure = "lower-triangular";
  sp.specials = {{1, NAN}, {3, INFINITY}};
  const at::Tensor st = materialize(sp);
  EXPECT_EQ(st[0][1].item<float>(), 0.0f);
  EXPECT_EQ(st[1][0].item<float>(), INFINITY);
  // A replay file naming an unknown structure is refused, not guessed.
  Case bad;
  bad.tensors = {sp};
  nlohmann::json j = case_to_json(bad);
  j["tensors"][0]["structure"] = "banded";
  Case back;
  std::string error;
  EXPECT_FALSE(case_from_json(j, &back, &error));
  EXPECT_NE(error.find("banded"), std::string::npos) << error;
}

}  // namespace

// The dtype a case is verified in (and its tolerance's key) is the dtype of the schema's case
// dtype input, wherever it stands: SPEC's group_by_sum passes int64 keys before float values.
TEST(Case, TheCaseDtypeIsThatOfTheSchemasCaseDtypeInput) {
  OpSchema schema;
  InputSpec keys, values;
  keys.name = "keys";
  keys.dtypes = {DType::Int64};
  values.name = "values";
  values.dtypes = {DType::Float32, DType::Float16};
  schema.inputs = {keys, values};
  Case c;
  c.tensors = {recipe(DType::Int64, Distribution::Index, {8}), recipe(DType::Float16, Distribution::Normal, {8})};
  c.tensors[0].name = "keys";
  c.tensors[1].name = "values";
  ASSERT_EQ(&case_recipe(schema, c), &c.tensors[1]);
  EXPECT_EQ(case_dtype(schema, c), DType::Float16);
  // Floats first (every dense op): the first input, as before.
  std::swap(schema.inputs[0], schema.inputs[1]);
  std::swap(c.tensors[0], c.tensors[1]);
  EXPECT_EQ(&case_recipe(schema, c), &c.tensors[0]);
  // An integer-only op: its first input's dtype; a case without tensors: float32.
  schema.inputs = {keys};
  c.tensors = {recipe(DType::Int64, Distribution::Index, {8})};
  c.tensors[0].name = "keys";
  EXPECT_EQ(case_dtype(schema, c), DType::Int64);
  c.tensors.clear();
  EXPECT_EQ(case_dtype(schema, c), DType::Float32);
}
