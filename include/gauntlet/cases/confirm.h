// A crash, timeout or protocol violation counts against a kernel only once it recurs in a fresh child.
#pragma once
#include <functional>

#include "gauntlet/cases/gate.h"

namespace gauntlet {

// Whether `v` is a failure that must recur before it is the kernel's (SPEC "Seeds and replay"):
// status fail or error, category crash or timeout (a protocol violation is a crash).
bool needs_confirmation(const GateVerdict& v);

// `again` runs the deciding case once more in a fresh child. A failure of the same category that
// recurs stands, with the second outcome in evidence["confirmed"]; one that does not is
// `harness-error`, never the kernel's fault, with both outcomes in evidence ("first", "again").
GateVerdict confirm_failure(const GateVerdict& first, const std::function<GateVerdict()>& again);

// The deciding case of `v`, read back from its replay file; false when it has none.
bool deciding_case(const GateVerdict& v, Case* c);

}  // namespace gauntlet
