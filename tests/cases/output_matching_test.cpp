// Output matching under the schema's equivalences (output_matching.h): sets, multisets, tied indices, aligned rows.
#include "gauntlet/cases/output_matching.h"

#include <gtest/gtest.h>

namespace gauntlet {
namespace {

at::Tensor L(const std::vector<int64_t>& v, std::vector<int64_t> shape = {}) {
  if (shape.empty()) shape = {int64_t(v.size())};
  return at::tensor(v, at::kLong).reshape(shape).clone();
}
at::Tensor D(const std::vector<double>& v, std::vector<int64_t> shape = {}) {
  if (shape.empty()) shape = {int64_t(v.size())};
  return at::tensor(v, at::kDouble).reshape(shape).clone();
}

OutputSpec output(const std::string& name, const std::string& equivalence = "elementwise") {
  OutputSpec o;
  o.name = name;
  o.equivalence = equivalence;
  return o;
}

// unique's shape of freedom: values as a set, counts following them.
OpSchema unique_like() {
  OpSchema s;
  s.name = "unique";
  OutputSpec counts = output("counts");
  counts.aligned_with = "values";
  s.outputs = {output("values", "set"), counts};
  return s;
}

TEST(OutputMatching, ASetInAnotherOrderIsPutInTheOraclesOrderWithTheRowsAlignedToIt) {
  const OutputMatch m = match_outputs(unique_like(), {}, {}, {L({3, 1, 2}), L({5, 7, 9})}, {L({1, 2, 3}), L({7, 9, 5})});
  ASSERT_TRUE(m.ok) << m.message;
  EXPECT_TRUE(at::equal(m.outputs[0], L({1, 2, 3})));
  EXPECT_TRUE(at::equal(m.outputs[1], L({7, 9, 5}))) << "the counts did not follow their values";
}

TEST(OutputMatching, ASetWithARepeatedRowOrAMissingOneDoesNotMatch) {
  const OutputMatch repeated = match_outputs(unique_like(), {}, {}, {L({1, 1, 3}), L({1, 1, 1})}, {L({1, 2, 3}), L({1, 1, 1})});
  EXPECT_FALSE(repeated.ok);
  EXPECT_NE(repeated.message.find("row 2 is missing"), std::string::npos) << repeated.message;
  // Counts that do not follow their values fail the elementwise judge after matching, not here.
  const OutputMatch swapped = match_outputs(unique_like(), {}, {}, {L({2, 1}), L({4, 6})}, {L({1, 2}), L({4, 6})});
  ASSERT_TRUE(swapped.ok) << swapped.message;
  EXPECT_TRUE(at::equal(swapped.outputs[1], L({6, 4})));
}

TEST(OutputMatching, MultisetRowsKeepTheirMultiplicity) {
  OpSchema join;
  join.outputs = {output("pairs", "multiset")};
  const at::Tensor want = L({0, 1, 0, 1, 2, 3}, {3, 2});
  const OutputMatch same = match_outputs(join, {}, {}, {L({2, 3, 0, 1, 0, 1}, {3, 2})}, {want});
  ASSERT_TRUE(same.ok) << same.message;
  EXPECT_TRUE(at::equal(same.outputs[0], want));
  const OutputMatch dropped_duplicate = match_outputs(join, {}, {}, {L({0, 1, 2, 3, 2, 3}, {3, 2})}, {want});
  EXPECT_FALSE(dropped_duplicate.ok);
  EXPECT_NE(dropped_duplicate.message.find("(0, 1)"), std::string::npos) << dropped_duplicate.message;
}

// topk: indices may be any of the tied elements, even one past the k-th that ties with it; they
// must point at elements holding the value at their position, and each only once.
OpSchema topk_like() {
  OpSchema s;
  OutputSpec indices = output("indices", "permutation_of_ties");
  indices.tie_key = "values";
  s.outputs = {output("values"), indices};
  return s;
}

TEST(OutputMatching, TiedIndicesMayBeAnyTiedElementOnce) {
  const at::Tensor x = D({3, 1, 3, 2}, {1, 4});
  const std::vector<at::Tensor> oracle = {D({3, 3}, {1, 2}), L({0, 2}, {1, 2})};
  const OutputMatch swapped = match_outputs(topk_like(), {}, {x}, {D({3, 3}, {1, 2}), L({2, 0}, {1, 2})}, oracle);
  ASSERT_TRUE(swapped.ok) << swapped.message;
  EXPECT_TRUE(at::equal(swapped.outputs[1], L({0, 2}, {1, 2})));
  const OutputMatch twice = match_outputs(topk_like(), {}, {x}, {D({3, 3}, {1, 2}), L({0, 0}, {1, 2})}, oracle);
  EXPECT_FALSE(twice.ok);
  EXPECT_NE(twice.message.find("repeats index 0"), std::string::npos) << twice.message;
  const OutputMatch wrong = match_outputs(topk_like(), {}, {x}, {D({3, 3}, {1, 2}), L({0, 3}, {1, 2})}, oracle);
  EXPECT_FALSE(wrong.ok);
  EXPECT_NE(wrong.message.find("is 3, whose element 2"), std::string::npos) << wrong.message;
  const OutputMatch outside = match_outputs(topk_like(), {}, {x}, {D({3, 3}, {1, 2}), L({0, 4}, {1, 2})}, oracle);
  EXPECT_FALSE(outside.ok);
  // k = 1 with the largest value twice: the second occurrence is as right as the first.
  const OutputMatch boundary = match_outputs(topk_like(), {}, {D({3, 1, 3}, {1, 3})}, {D({3}, {1, 1}), L({2}, {1, 1})},
                                             {D({3}, {1, 1}), L({0}, {1, 1})});
  EXPECT_TRUE(boundary.ok) << boundary.message;
}

TEST(OutputMatching, TiesAreWithinARowOfTheInput) {
  // Row 1's value 5 sits at index 0 of row 0 only: an index into another row is not a tie.
  const at::Tensor x = D({5, 0, 0, 5}, {2, 2});
  const OutputMatch m = match_outputs(topk_like(), {}, {x}, {D({5, 5}, {2, 1}), L({0, 0}, {2, 1})},
                                      {D({5, 5}, {2, 1}), L({0, 1}, {2, 1})});
  EXPECT_FALSE(m.ok) << "row 1's index 0 holds 0, not 5";
}

TEST(OutputMatching, AStrictAttributeOrAnotherExtentLeavesTheOutputsAsTheyAre) {
  OpSchema s = unique_like();
  s.outputs[0].strict_when = "sorted";
  const std::vector<at::Tensor> kernel = {L({3, 1, 2}), L({5, 7, 9})};
  const OutputMatch strict = match_outputs(s, {{"sorted", true}}, {}, kernel, {L({1, 2, 3}), L({7, 9, 5})});
  ASSERT_TRUE(strict.ok);
  EXPECT_TRUE(at::equal(strict.outputs[0], kernel[0]));
  const OutputMatch shorter = match_outputs(unique_like(), {}, {}, {L({3, 1}), L({5, 7})}, {L({1, 2, 3}), L({7, 9, 5})});
  ASSERT_TRUE(shorter.ok) << "the count is the contract check's to report";
  EXPECT_TRUE(at::equal(shorter.outputs[0], L({3, 1})));
}

TEST(OutputMatching, OnlySchemasWithAFreedomNeedMatching) {
  OpSchema dense;
  dense.outputs = {output("y")};
  EXPECT_FALSE(has_output_freedom(dense));
  EXPECT_TRUE(has_output_freedom(unique_like()));
  EXPECT_TRUE(has_output_freedom(topk_like()));
}

}  // namespace
}  // namespace gauntlet
