// The database-style ops' fp64 oracles (src/oracle/oracle_database.cpp) against hand-worked values and the SPEC's semantics.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "gauntlet/oracle/oracle.h"

namespace gauntlet {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

at::Tensor F(const std::vector<double>& v, std::vector<int64_t> shape = {}, at::ScalarType dtype = at::kFloat) {
  if (shape.empty()) shape = {int64_t(v.size())};
  return at::tensor(v, at::kDouble).reshape(shape).to(dtype);
}
at::Tensor L(const std::vector<int64_t>& v, std::vector<int64_t> shape = {}) {
  if (shape.empty()) shape = {int64_t(v.size())};
  return at::tensor(v, at::kLong).reshape(shape).clone();
}

std::vector<double> D(const at::Tensor& t) {
  const at::Tensor c = t.to(at::kDouble).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}
std::vector<int64_t> I(const at::Tensor& t) {
  EXPECT_EQ(t.scalar_type(), at::kLong);
  const at::Tensor c = t.contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

// NaN equal to NaN, everything else exactly.
void expect_same(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) EXPECT_TRUE(std::isnan(got[i])) << i;
    else EXPECT_EQ(got[i], want[i]) << i;
  }
}

TEST(DatabaseOracles, AreListedWithTheirSchemas) {
  const std::vector<std::string> ids = oracle_ids();
  // Each with its schema, control and library baselines (issue 20): listed, none left pending.
  for (const char* op : {"segment_sum", "filter", "sort", "topk", "group_by_sum", "scatter_add", "unique", "hash_join"})
    EXPECT_EQ(std::count(ids.begin(), ids.end(), op), 1) << op;
  EXPECT_NE(run_oracle("nonexistent_op", {F({1})}, {}).error.find("unknown oracle id"), std::string::npos);
}

// x[x > t]: order kept, NaN and values equal to the threshold dropped, output length data-dependent.
TEST(DatabaseOracles, FilterKeepsOrderAndDropsNaNAndTheThreshold) {
  const OracleResult r = run_oracle("filter", {F({3, -1, 0.5, kNaN, 2, 0.5, kInf})}, {{"threshold", 0.5}});
  ASSERT_TRUE(r.ok()) << r.error;
  expect_same(D(r.outputs[0]), {3, 2, kInf});
  const OracleResult none = run_oracle("filter", {F({-1, -2})}, {{"threshold", 0.0}});
  ASSERT_TRUE(none.ok()) << none.error;
  EXPECT_EQ(none.outputs[0].numel(), 0);
}

// Stable ascending by key, NaN last, -0 and +0 equal (kept in input order), values permuted alike.
TEST(DatabaseOracles, SortIsStableWithNaNLastAndValuesFollow) {
  const OracleResult r = run_oracle("sort", {F({2, kNaN, -0.0, 1, 0.0, 1, -kInf}), L({10, 11, 12, 13, 14, 15, 16})}, {});
  ASSERT_TRUE(r.ok()) << r.error;
  expect_same(D(r.outputs[0]), {-kInf, -0.0, 0.0, 1, 1, 2, kNaN});
  EXPECT_TRUE(std::signbit(D(r.outputs[0])[1])) << "-0.0 came first in the input and stays first";
  EXPECT_EQ(I(r.outputs[1]), (std::vector<int64_t>{16, 12, 14, 13, 15, 10, 11}));
  EXPECT_FALSE(run_oracle("sort", {F({1, 2}), L({1})}, {}).ok());
}

TEST(DatabaseOracles, UniqueIsSortedWithCounts) {
  const OracleResult r = run_oracle("unique", {L({5, -3, 5, 5, 0, -3, std::numeric_limits<int64_t>::max()})}, {});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(I(r.outputs[0]), (std::vector<int64_t>{-3, 0, 5, std::numeric_limits<int64_t>::max()}));
  EXPECT_EQ(I(r.outputs[1]), (std::vector<int64_t>{2, 1, 3, 1}));
  const OracleResult empty = run_oracle("unique", {L({})}, {});
  ASSERT_TRUE(empty.ok()) << empty.error;
  EXPECT_EQ(empty.outputs[0].numel(), 0);
  EXPECT_EQ(empty.outputs[1].numel(), 0);
}

// Largest first per row, NaN largest (torch.topk), ties by the lower index (one allowed order).
TEST(DatabaseOracles, TopkTakesTheLargestPerRowWithNaNFirst) {
  const OracleResult r = run_oracle("topk", {F({1, 5, 5, kNaN, 2, /**/ -1, -2, -3, -4, -5}, {2, 5})}, {{"k", int64_t(3)}});
  ASSERT_TRUE(r.ok()) << r.error;
  expect_same(D(r.outputs[0]), {kNaN, 5, 5, -1, -2, -3});
  EXPECT_EQ(I(r.outputs[1]), (std::vector<int64_t>{3, 1, 2, 0, 1, 2}));
  EXPECT_EQ(r.outputs[1].sizes().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_FALSE(run_oracle("topk", {F({1, 2}, {1, 2})}, {{"k", int64_t(3)}}).ok()) << "k past the row";
}

// Rows of x summed per segment; an empty segment gives 0; scales are sum |x|.
TEST(DatabaseOracles, SegmentSumSumsEachSegmentAndEmptyOnesAreZero) {
  const at::Tensor x = F({1, 10, 2, 20, -4, 40, 8, -80}, {4, 2});
  const OracleResult r = run_oracle("segment_sum", {x, L({0, 2, 2, 4})}, {});
  ASSERT_TRUE(r.ok()) << r.error;
  expect_same(D(r.outputs[0]), {3, 30, 0, 0, 4, -40});
  expect_same(D(r.scales[0]), {3, 30, 0, 0, 12, 120});
  EXPECT_FALSE(run_oracle("segment_sum", {x, L({0, 3, 2, 4})}, {}).ok()) << "decreasing offsets";
  EXPECT_FALSE(run_oracle("segment_sum", {x, L({0, 2, 3})}, {}).ok()) << "offsets not ending at size(x, 0)";
  EXPECT_FALSE(run_oracle("segment_sum", {x, L({1, 2, 4})}, {}).ok()) << "offsets not starting at 0";
  // No rows and no segments: offsets {0}, a [0, 2] output.
  const OracleResult none = run_oracle("segment_sum", {F({}, {0, 2}), L({0})}, {});
  ASSERT_TRUE(none.ok()) << none.error;
  EXPECT_EQ(none.outputs[0].sizes().vec(), (std::vector<int64_t>{0, 2}));
  // NaN and inf stay in their own segment and column; +inf and -inf together give NaN.
  const OracleResult sp = run_oracle("segment_sum", {F({kNaN, 1, kInf, -kInf, 2, kInf}, {3, 2}), L({0, 1, 1, 3})}, {});
  ASSERT_TRUE(sp.ok()) << sp.error;
  expect_same(D(sp.outputs[0]), {kNaN, 1, 0, 0, kInf, kNaN});
}

// zeros(G).index_add_(0, keys, values): every group, untouched ones 0, NaN propagating; keys out
// of [0, G) are refused.
TEST(DatabaseOracles, GroupBySumAndScatterAddAreIndexAdd) {
  const OracleResult g = run_oracle("group_by_sum", {L({2, 0, 2, 2}), F({1.5, -1, kNaN, 3})}, {{"num_groups", int64_t(4)}});
  ASSERT_TRUE(g.ok()) << g.error;
  expect_same(D(g.outputs[0]), {-1, 0, kNaN, 0});
  const OracleResult s = run_oracle("scatter_add", {F({1.5, -1, 2, 3}), L({2, 0, 2, 2})}, {{"size", int64_t(3)}});
  ASSERT_TRUE(s.ok()) << s.error;
  expect_same(D(s.outputs[0]), {-1, 0, 6.5});
  expect_same(D(s.scales[0]), {1, 0, 6.5});
  EXPECT_FALSE(run_oracle("scatter_add", {F({1}), L({3})}, {{"size", int64_t(3)}}).ok());
  EXPECT_FALSE(run_oracle("group_by_sum", {L({-1}), F({1})}, {{"num_groups", int64_t(3)}}).ok());
}

// Every matching pair, many-to-many, sorted by (i, j); no match gives a [0, 2] result.
TEST(DatabaseOracles, HashJoinListsEveryMatchingPairInOrder) {
  const OracleResult r = run_oracle("hash_join", {L({7, 3, 7, 9}), L({7, 1, 7, 3})}, {});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.outputs[0].sizes().vec(), (std::vector<int64_t>{5, 2}));
  EXPECT_EQ(I(r.outputs[0]), (std::vector<int64_t>{0, 0, 0, 2, 1, 3, 2, 0, 2, 2}));
  const OracleResult none = run_oracle("hash_join", {L({1, 2}), L({3})}, {});
  ASSERT_TRUE(none.ok()) << none.error;
  EXPECT_EQ(none.outputs[0].sizes().vec(), (std::vector<int64_t>{0, 2}));
}

// On random inputs with repeats, NaN and infinities, the oracles agree with ATen's own float64
// ops wherever those define the answer (sort's values and stable permutation, topk's values,
// unique with counts, index_add_ for the grouped sums, boolean masking for filter).
TEST(DatabaseOracles, AgreeWithAtenOnRandomInputs) {
  at::manual_seed(20261205);
  at::Tensor keys = at::randint(-4, 5, {300}, at::kLong).to(at::kDouble) / 2;  // many ties
  keys.index_put_({at::arange(0, 300, 37)}, kNaN);
  keys.index_put_({at::arange(5, 300, 53)}, kInf);
  const at::Tensor vals = at::arange(300, at::kLong);
  const OracleResult s = run_oracle("sort", {keys, vals}, {});
  ASSERT_TRUE(s.ok()) << s.error;
  const auto sorted = at::sort(keys, /*stable=*/true, /*dim=*/0, /*descending=*/false);
  expect_same(D(s.outputs[0]), D(std::get<0>(sorted)));
  EXPECT_EQ(I(s.outputs[1]), I(std::get<1>(sorted)));

  const at::Tensor rows = keys.reshape({6, 50});
  const OracleResult t = run_oracle("topk", {rows}, {{"k", int64_t(7)}});
  ASSERT_TRUE(t.ok()) << t.error;
  expect_same(D(t.outputs[0]), D(std::get<0>(at::topk(rows, 7, -1))));

  const at::Tensor ints = at::randint(-20, 20, {500}, at::kLong);
  const OracleResult u = run_oracle("unique", {ints}, {});
  ASSERT_TRUE(u.ok()) << u.error;
  const auto lib = at::_unique2(ints, /*sorted=*/true, /*return_inverse=*/false, /*return_counts=*/true);
  EXPECT_EQ(I(u.outputs[0]), I(std::get<0>(lib)));
  EXPECT_EQ(I(u.outputs[1]), I(std::get<2>(lib)));

  const at::Tensor x = at::randn({500}, at::kDouble);
  const at::Tensor index = at::randint(0, 37, {500}, at::kLong);
  const OracleResult g = run_oracle("scatter_add", {x, index}, {{"size", int64_t(40)}});
  ASSERT_TRUE(g.ok()) << g.error;
  const at::Tensor want = at::zeros({40}, at::kDouble).index_add_(0, index, x);
  EXPECT_TRUE(at::allclose(g.outputs[0], want, 1e-13, 1e-13));

  const OracleResult f = run_oracle("filter", {x}, {{"threshold", 0.25}});
  ASSERT_TRUE(f.ok()) << f.error;
  EXPECT_TRUE(at::equal(f.outputs[0], x.masked_select(x > 0.25)));
}

}  // namespace
}  // namespace gauntlet
