// Whether an op has an input a floating special value can be placed in (floating_inputs.h).
#include "floating_inputs.h"

#include <algorithm>

namespace gauntlet {

bool has_floating_input(const OpSchema& schema) {
  if (schema.inputs.empty()) return true;  // nothing declared to rule it out
  return std::any_of(schema.inputs.begin(), schema.inputs.end(), [](const InputSpec& in) {
    return !is_integer_value_kind(in.values.kind) && std::any_of(in.dtypes.begin(), in.dtypes.end(), dtype_is_floating);
  });
}

GateVerdict skip_without_floating_input(const std::string& gate, const std::string& values) {
  GateVerdict v;
  v.name = gate;
  v.status = Status::Skip;
  v.message = "skip: no floating input, so no " + values +
              " to place (integer extremes are the value domains' own, e.g. key distribution int64_limits)";
  return v;
}

}  // namespace gauntlet
