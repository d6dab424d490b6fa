// One root cause per failing kernel (root_cause.h).
#include "gauntlet/run/root_cause.h"

#include <limits>

#include "gauntlet/cases/contract_scope.h"

namespace gauntlet {
namespace {

std::string cause_key(const GateVerdict& v) {
  const nlohmann::json d = v.evidence.value("diagnosis", nlohmann::json::object());
  if (d.is_object() && d.contains("name")) return "diagnosis:" + d.value("name", "");
  return std::string(category_name(v.category)) + "/" + v.scope;
}

int64_t case_elements(const GateVerdict& v) {
  const nlohmann::json c = v.evidence.value("deciding_case", nlohmann::json::object());
  return c.is_object() && c.contains("elements") && c["elements"].is_number_integer() ? c["elements"].get<int64_t>()
                                                                                     : std::numeric_limits<int64_t>::max();
}

}  // namespace

nlohmann::json root_cause(const std::vector<GateVerdict>& gates) {
  bool any_in = false;
  for (const GateVerdict& v : gates) any_in |= fails_in_contract(v);
  const GateVerdict* lead = nullptr;
  for (const GateVerdict& v : gates) {
    if (!is_failing(v.status) || fails_in_contract(v) != any_in) continue;
    if (!lead || case_elements(v) < case_elements(*lead)) lead = &v;
  }
  if (!lead) return nullptr;
  const std::string key = cause_key(*lead);
  nlohmann::json same = nlohmann::json::array(), other = nlohmann::json::array();
  for (const GateVerdict& v : gates)
    if (is_failing(v.status)) (cause_key(v) == key ? same : other).push_back(v.name);
  const nlohmann::json d = lead->evidence.value("diagnosis", nlohmann::json::object());
  const nlohmann::json c = lead->evidence.value("deciding_case", nlohmann::json::object());
  nlohmann::json out;
  out["gate"] = lead->name;
  out["scope"] = lead->scope.empty() ? kInContract : lead->scope;
  out["case"] = c.is_object() ? c.value("label", "") : "";
  out["elements"] = case_elements(*lead) == std::numeric_limits<int64_t>::max() ? nlohmann::json(nullptr)
                                                                               : nlohmann::json(case_elements(*lead));
  out["diagnosis"] = d.is_object() && d.contains("name") ? d["name"] : nlohmann::json(nullptr);
  out["text"] = d.is_object() && d.contains("text") ? d.value("text", "") : lead->message;
  out["gates"] = same;
  out["other_gates"] = other;
  return out;
}

std::string root_cause_line(const nlohmann::json& cause) {
  if (!cause.is_object()) return "";
  auto list = [](const nlohmann::json& a) {
    std::string s;
    for (const auto& g : a) s += (s.empty() ? "" : ", ") + g.get<std::string>();
    return s;
  };
  std::string line = cause.value("scope", "") + ", " + cause.value("gate", "");
  if (!cause["diagnosis"].is_null()) line += ", " + cause["diagnosis"].get<std::string>();
  line += ": " + cause.value("text", "");
  if (line.size() > 240) line = line.substr(0, 237) + "...";
  const size_t same = cause.value("gates", nlohmann::json::array()).size();
  if (same > 1) line += " (the same cause fails " + std::to_string(same) + " gates: " + list(cause["gates"]) + ")";
  if (!cause.value("other_gates", nlohmann::json::array()).empty()) line += "; also failing: " + list(cause["other_gates"]);
  return line;
}

}  // namespace gauntlet
