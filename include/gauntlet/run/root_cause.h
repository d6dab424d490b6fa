// One root cause per failing kernel: the failing gates grouped by cause (a named diagnosis, else
// the category and scope of the failure), led by the smallest failing case, so that one bug that
// fails six gates reads as one line and not as six.
#pragma once
#include <vector>

#include <nlohmann/json.hpp>

#include "gauntlet/cases/gate.h"

namespace gauntlet {

// The kernel's root cause as JSON, null when no gate failed:
//   {"gate", "scope", "case", "elements", "diagnosis" (name or null), "text",
//    "gates" (the failing gates of the same cause, in gate order), "other_gates" (the rest)}
// The leading gate is the one, among failures in the verdict's scope (in-contract ones when any),
// whose deciding case has the fewest input elements (evidence.deciding_case, written with the
// replay file); failures without a case (a build or load error) count as the largest.
nlohmann::json root_cause(const std::vector<GateVerdict>& gates);

// The one line the verify table, the audit summary and the report lead a failing kernel with.
std::string root_cause_line(const nlohmann::json& cause);

}  // namespace gauntlet
