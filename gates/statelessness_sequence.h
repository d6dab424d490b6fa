// The statelessness gate's call sequence: the case A it draws, and the calls B and A again planned around it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "gauntlet/cases/case.h"

// tests/gates/statelessness_test.cpp declares Step and plan_sequence as they are here.
namespace gauntlet::statelessness_gate {

// Draws dims (uniformly over the candidates), shape alternative, dtype, attributes and seed; false
// when the schema's constraints or the cost cap reject the combination (the caller discards it).
// Inside a RapidCheck property.
bool draw_case(const CaseSpace& space, int64_t cost_cap, Case* out);

// The shape alternative a case was built with (stored cases do not record it).
size_t find_alt(const CaseSpace& space, const Case& c);

// One call of a sequence.
struct Step {
  std::string what;
  Case c;
  bool is_a = false;
};

// A, then each B the case allows (new values; new attribute values; a new shape), each followed
// by A again.
std::vector<Step> plan_sequence(const CaseSpace& space, const Case& a);

}  // namespace gauntlet::statelessness_gate
