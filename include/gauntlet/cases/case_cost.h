// What one case costs, and the budget a case-drawing gate draws under: a cap per case and a number
// of cases, raised to the contract's smallest case (fewer cases, never none) when the contract
// fixes shapes above the cap, as a KernelBench module's get_inputs() does.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gauntlet/cases/case.h"
#include "gauntlet/schema/schema.h"

namespace gauntlet {

// Elements of every input and explicitly shaped output plus the schema's flop count: what one
// kernel call costs in transfer and work, roughly (outputs shaped like an input are no larger).
int64_t case_cost(const OpSchema& schema, const Case& c);
// The element count of every input (by name) and every explicitly shaped output ("output NAME"),
// the tensors case_cost counts.
std::vector<std::pair<std::string, int64_t>> case_tensor_numels(const OpSchema& schema, const Case& c);

// A case's integer variables for the schema's expressions: its dims, its int and bool attributes,
// and elem_size (the first tensor's element size).
std::map<std::string, int64_t> case_int_vars(const Case& c);

// The cost of the cheapest case the contract allows (every dim at its lower limit, the cheapest
// shape alternative and dtype); -1 when no such case can be built.
int64_t smallest_case_cost(const CaseSpace& space);

struct CaseBudget {
  int64_t cap = 0;       // case_cost units per case
  int cases = 0;         // cases to run
  int64_t floor = -1;    // smallest_case_cost, -1 unknown
  bool raised() const { return floor > 0 && cap == floor; }
  // For the gate's message: "" unless raised, else why it ran fewer cases than usual.
  std::string note() const;
};

// Smallest cases run at least this many times: a fixed-shape contract still varies dtype,
// attributes and values between them.
constexpr int kMinCasesAtFloor = 3;

// The usual per-case budget of the case-drawing gates, in case_cost's units: a case of the schema's
// typical shapes stays in the millisecond range for the generator, the fp64 oracle and the kernel.
constexpr int64_t kCaseCostCap = int64_t(1) << 18;

// `gate_cap` and `gate_cases` when the contract's smallest case fits under the cap. Otherwise the
// cap becomes that case's cost and the cases shrink in proportion (gate_cases * gate_cap / floor,
// at least `min_cases` (kMinCasesAtFloor unless a gate needs more to cover what it varies), at most
// gate_cases): the problem's own shapes, however large.
CaseBudget case_budget(const CaseSpace& space, int64_t gate_cap, int gate_cases, int min_cases = kMinCasesAtFloor);

}  // namespace gauntlet
