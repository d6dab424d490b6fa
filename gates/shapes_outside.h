// Cases outside the shapes gate's contract, which the kernel must refuse or answer right.
#pragma once
#include <string>
#include <vector>

#include "gauntlet/cases/case.h"
#include "gauntlet/cases/gate.h"
#include "shapes_budget.h"

namespace gauntlet::shapes_gate {

// Cases outside the contract: (a) a dim just past a limit where the manifest narrows the schema,
// (b) the schema's error inputs applied to valid typical cases. Between them, probes of the
// contract's ranks, equal dims and fixed sizes. Seeds derive from `gate`; *untested collects the
// probes no case within `budget` could be built for.
std::vector<Case> outside_cases(GateContext& ctx, const std::string& gate, const Budget& budget,
                                std::vector<std::string>* untested);

}  // namespace gauntlet::shapes_gate
