// Where the special-values gate puts NaN and Inf in a case's inputs, and the cases it draws with them.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "gauntlet/cases/case.h"

// Exposed for tests/gates/special_values_test.cpp, which declares them as they are here.
namespace gauntlet::special_values {

enum class Where : int64_t {
  First = 0,    // element 0
  Last,         // the last element
  Random,       // any element
  TileEdge,     // k*T - 1, k*T or k*T + 1 for a tile T in 8..128, in flat order or along the last dim
  Row,          // a whole slice along the last dim
  Line,         // a whole slice along `axis` (the reduced dim, else dim 0)
  Count,
};

// Flat logical indices of one placement in a tensor of `shape`; `a` and `b` are the drawn
// parameters (0 is the simplest choice: RapidCheck shrinks toward it). *what describes the spot.
std::vector<int64_t> placement_indices(const std::vector<int64_t>& shape, Where where, int64_t axis, uint64_t a,
                                       uint64_t b, std::string* what);

// Draws a case with special values (inside a RapidCheck property): value seed, dtype, a list of
// 1..6 placements, each (input, value, kind of position, two position parameters), then shape and
// attributes. RapidCheck shrinks what was drawn first first, a list by dropping any of its
// elements, and each field toward 0 (the first input, NaN, the first element): a failure shrinks
// to the fewest, plainest special values, then to the smallest shape that still fails with them
// (positions are taken modulo the shape, so they stay valid as it shrinks).
Case draw_case(const CaseSpace& space);

}  // namespace gauntlet::special_values
