// The shapes gate's held-out size candidates and the per-case budget its cases must fit.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gauntlet/cases/case.h"
#include "gauntlet/schema/schema.h"

namespace gauntlet {

// Size candidates and the case budget; tests/gates/shapes_test.cpp declares these again to test them.
namespace shapes_gate {

// Per-case caps. `elements` bounds every input and output tensor, `flops` the schema's cost.flops
// (the fp64 oracle and a naive kernel both scale with it). Measured on a 2-core CPU, a case costs
// about 1.5 ms plus 0.3 us per element (generation, oracle, kernel, transfer, judging), so the caps
// keep a whole gate run on a control in a few tenths of a second at budget 1.
struct Budget {
  int64_t elements = 0;
  int64_t flops = 0;
};
// One dim at a held-out size (up to the largest declared), the other dims small.
Budget sweep_budget(int budget);
// Several dims at held-out sizes at once (the RapidCheck search).
Budget combo_budget(int budget);

// Held-out sizes of one dim inside the contract, ascending (RapidCheck shrinks toward the first):
// 0 where the schema allows it, 1 (or the contract's minimum), small and large primes, tile edges
// and their neighbours, the schema's hazards, and the largest declared size.
std::vector<int64_t> size_candidates(const CaseSpace& space, const std::string& dim);

// The case's integer variables for the schema's expressions (dims, int and bool attributes, elem_size).
std::map<std::string, int64_t> expr_vars(const Case& c);
// The case's tensor shapes by name.
ShapeMap shape_map(const Case& c);

// True when every tensor of the case and its oracle work fit the budget; *why says what does not.
bool within_budget(const OpSchema& schema, const Case& c, const Budget& b, std::string* why);

// The budget that admits `c` and everything `b` admits: a contract of exact sizes larger than the
// gate's caps (a KernelBench problem's get_inputs()) still runs its own shape.
Budget raised_to(const OpSchema& schema, const Case& c, Budget b);

}  // namespace shapes_gate
}  // namespace gauntlet
