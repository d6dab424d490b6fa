// The statelessness gate's batch property: which inputs carry a batch dim the op maps row by row.
#pragma once
#include <string>
#include <vector>

#include "gauntlet/cases/case.h"
#include "gauntlet/schema/schema.h"

// tests/gates/statelessness_test.cpp declares batch_inputs as it is here.
namespace gauntlet::statelessness_gate {

// The shape pattern each input of `c` was built with (shape alternative `alt` for the first).
std::vector<std::vector<std::string>> chosen_patterns(const OpSchema& schema, const Case& c, size_t alt);

// Which inputs to slice along their leading dim for the batch property, or empty with *why when
// the first input's leading dim is not a batch the op maps row by row (reduced over, absent from
// the output, or mixed with other dims).
std::vector<bool> batch_inputs(const OpSchema& schema, const Case& c, size_t alt, std::string* why);

}  // namespace gauntlet::statelessness_gate
