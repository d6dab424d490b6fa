// Case shapes drawn inside a RapidCheck property, small enough for milliseconds a case; the special-values and subnormals gates draw theirs here.
#pragma once
#include <cstdint>

#include "gauntlet/cases/case.h"
#include "gauntlet/schema/schema.h"

namespace gauntlet::gate_cases {

// Uniform in [0, n), shrinking toward 0.
int64_t pick_uniform(int64_t n);

// A case of `dtype`: dims drawn from each dim's candidates (with `tiny` also the two sizes above
// the smallest; with `uniform_dims` each equally likely from the first case on), attributes drawn,
// and the case cut down under the work and element caps.
Case draw_shaped_case(const CaseSpace& space, DType dtype, Distribution dist, uint64_t seed, bool tiny,
                      bool uniform_dims);

// The dim of `input` that the op reduces over (its dim attribute), or -1.
int64_t reduced_axis(const OpSchema& schema, const Case& c, const TensorRecipe& input);

}  // namespace gauntlet::gate_cases
