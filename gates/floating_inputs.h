// Whether an op has an input a floating special value can be placed in, and the skip verdict when not.
#pragma once
#include <string>

#include "gauntlet/cases/gate.h"

namespace gauntlet {

// An input is floating when its value domain is not an integer one (keys, indices, counts, int8
// data) and one of its dtypes is a floating dtype. special-values and subnormals place their values
// only there: an op without one (unique, hash_join: int64 keys only) has nothing to place them in.
bool has_floating_input(const OpSchema& schema);

// The verdict of a gate that has nothing to place in such an op: a skip that says why (its integer
// extremes are the value domains' own, drawn in every gate). `values` names what was not placed.
GateVerdict skip_without_floating_input(const std::string& gate, const std::string& values);

}  // namespace gauntlet
