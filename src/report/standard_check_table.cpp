// The standard check against gauntlet's verdict over audit records: the 2x2 (3x2 with unsafe) and its lines.
#include <cstdio>

#include "gauntlet/run/report_text.h"
#include "gauntlet/audit/results_db.h"
#include "gauntlet/run/standard_check.h"

namespace gauntlet {
namespace {

// The record's standard-check verdict, "" when it has none.
std::string check_verdict(const nlohmann::json& r) {
  if (!r.is_object() || !r.contains("standard_check")) return "";
  auto c = standard_check_from_json(r["standard_check"]);
  return c ? c->verdict : "";
}

// gauntlet's column: pass, unsafe or fail (fail and error); "" for what the table leaves out
// (incomplete kernels, entries that are not kernels).
std::string gauntlet_column(const nlohmann::json& r) {
  if (!r.is_object() || r.contains("entry_error")) return "";
  const std::string v = json_text(r, "verdict");
  if (v == "pass" || v == "unsafe") return v;
  if (v == "fail" || v == "error") return "fail";
  return "";
}

}  // namespace

bool standard_check_flags(const nlohmann::json& record) {
  return check_verdict(record) == "reject" && gauntlet_column(record) == "pass";
}

nlohmann::json standard_check_table(const nlohmann::json& records) {
  const nlohmann::json zero = {{"pass", 0}, {"unsafe", 0}, {"fail", 0}};
  nlohmann::json t = {{"accept", zero}, {"reject", zero}, {"compared", 0}, {"check_error", 0}, {"not_run", 0},
                      {"flagged", nlohmann::json::array()}};
  if (!records.is_array()) return t;
  for (const nlohmann::json& r : records) {
    const std::string column = gauntlet_column(r), check = check_verdict(r);
    if (column.empty()) continue;
    if (check.empty()) {
      t["not_run"] = t["not_run"].get<int>() + 1;
    } else if (check == "error") {
      t["check_error"] = t["check_error"].get<int>() + 1;
    } else {
      t[check][column] = t[check][column].get<int>() + 1;
      t["compared"] = t["compared"].get<int>() + 1;
      if (standard_check_flags(r))
        t["flagged"].push_back({{"label", record_label(r)}, {"reason", json_text(r["standard_check"], "reason")}});
    }
  }
  return t;
}

std::vector<std::string> standard_check_lines(const nlohmann::json& t) {
  std::vector<std::string> lines;
  const int compared = t.value("compared", 0), errors = t.value("check_error", 0), not_run = t.value("not_run", 0);
  if (compared + errors == 0) return lines;
  auto cell = [&](const char* row, const char* column) {
    const nlohmann::json counts = t.value(row, nlohmann::json::object());
    return counts.is_object() ? counts.value(column, 0) : 0;
  };
  char buf[160];
  std::snprintf(buf, sizeof buf, "standard check against gauntlet (%d kernels; KernelBench's check for modules, kbcheck for manifests):",
                compared);
  lines.push_back(buf);
  std::snprintf(buf, sizeof buf, "  %-18s %8s %8s %12s", "", "pass", "unsafe", "fail/error");
  lines.push_back(buf);
  for (const char* row : {"accept", "reject"}) {
    std::snprintf(buf, sizeof buf, "  %-18s %8d %8d %12d", (std::string("standard ") + row + "s").c_str(),
                  cell(row, "pass"), cell(row, "unsafe"), cell(row, "fail"));
    lines.push_back(buf);
  }
  std::string apart;
  if (errors) apart += std::to_string(errors) + " kernels whose standard check could not run (error)";
  if (not_run) apart += std::string(apart.empty() ? "" : "; ") + std::to_string(not_run) + " kernels without one";
  if (!apart.empty()) lines.push_back("  not in the table: " + apart);
  const nlohmann::json flagged = t.value("flagged", nlohmann::json::array());
  if (flagged.is_array() && !flagged.empty()) {
    lines.push_back("standard check rejects, gauntlet passes (" + std::to_string(flagged.size()) +
                    "): each a gauntlet false negative or a false alarm of the standard check:");
    for (const nlohmann::json& f : flagged)
      lines.push_back("  FLAGGED " + json_text(f, "label") + ": " + json_text(f, "reason"));
  }
  return lines;
}

}  // namespace gauntlet
