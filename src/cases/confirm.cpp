// Confirming a crash, timeout or protocol violation by its deciding case in a fresh child.
#include "gauntlet/cases/confirm.h"

#include <fstream>

namespace gauntlet {
namespace {

nlohmann::json outcome_json(const GateVerdict& v) {
  return {{"status", status_name(v.status)}, {"category", category_name(v.category)}, {"message", v.message}};
}

}  // namespace

bool needs_confirmation(const GateVerdict& v) {
  return (v.status == Status::Fail || v.status == Status::Error) &&
         (v.category == Category::Crash || v.category == Category::Timeout);
}

bool deciding_case(const GateVerdict& v, Case* c) {
  if (v.replay.empty()) return false;
  std::ifstream in(v.replay);
  if (!in) return false;
  try {
    const nlohmann::json j = nlohmann::json::parse(in);
    std::string error;
    return j.contains("case") && case_from_json(j.at("case"), c, &error);
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

GateVerdict confirm_failure(const GateVerdict& first, const std::function<GateVerdict()>& again) {
  const GateVerdict second = again();
  GateVerdict v = first;
  if (is_failing(second.status) && second.status != Status::HarnessError && second.category == first.category) {
    v.evidence["confirmed"] = {{"again", outcome_json(second)}, {"how", "the deciding case, once more in a fresh child"}};
    return v;
  }
  // The kernel did not do it again: gauntlet (or the machine) did it, and it is not blamed on the kernel.
  v.status = Status::HarnessError;
  v.category = Category::HarnessError;
  v.message = std::string(category_name(first.category)) + " did not recur when its deciding case ran again in a fresh child (" +
              status_name(second.status) + (second.category == Category::None ? "" : std::string(" ") + category_name(second.category)) +
              "): not the kernel's fault; first: " + first.message;
  v.evidence["first"] = outcome_json(first);
  v.evidence["again"] = outcome_json(second);
  return v;
}

}  // namespace gauntlet
