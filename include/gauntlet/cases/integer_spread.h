// How an integer input's values are spread: group-by and join keys over skewed distributions, segment offsets.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gauntlet {

// A schema `key` or `offsets` value domain's `distribution` (docs/schema-format.md): how keys
// repeat, or how an offsets input's segment lengths vary.
enum class Spread {
  Uniform,      // keys: each drawn uniformly from [low, high); offsets: cut points uniform in [0, total]
  Zipf,         // keys: a few hot keys and a long tail (exponent alpha); offsets: a few huge segments, many empty
  AllEqual,     // keys: one key everywhere; offsets: one segment holds everything, the rest are empty
  AllDistinct,  // keys: no key twice while there are enough keys; offsets: lengths as equal as they can be
  SortedRuns,   // keys: ascending runs of equal keys; offsets: as uniform
  Extremes,     // arithmetic integers at the two ends of [low, high), each end with probability 1/2
                // (the accumulation gate's int8 operands: -128 and 127, products of +-16256..16384);
                // offsets: as uniform
  Int64Limits,  // keys: uniform in [low, high) but about one in four at the ends of int64 (INT64_MIN,
                // INT64_MIN + 1, INT64_MAX - 1, INT64_MAX), outside the range on purpose: the values a
                // kernel takes for "empty slot" or "past the end" sentinels, or whose sign a radix
                // sort's bit flip must get right (`key` domains only; lint); offsets: as uniform
};

const char* spread_name(Spread s);
std::optional<Spread> spread_from_name(const std::string& name);  // also accepts "" as Uniform

// The integer values of one input, a pure function of (seed, stream) and the parameters, so a
// replay draws the same bytes. `n` values in [low, high) (high > low), spread as `spread`
// (`alpha`: the Zipf exponent, > 0), sorted ascending when `sorted`.
std::vector<int64_t> draw_keys(int64_t n, int64_t low, int64_t high, Spread spread, double alpha, bool sorted,
                               uint64_t seed, uint64_t stream);

// Segment offsets: `count` values (S + 1 for S segments) from 0 up to `total`, non-decreasing,
// the first 0 and the last `total`, the segment lengths spread as `spread`. count 1 gives {0}
// when total is 0; a single offset can only be 0, so total is then ignored.
std::vector<int64_t> draw_offsets(int64_t count, int64_t total, Spread spread, double alpha, uint64_t seed,
                                  uint64_t stream);

}  // namespace gauntlet
