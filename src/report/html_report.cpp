// The HTML audit report: page skeleton, inline summary JSON, and the per-kernel table (see html_report.h).
#include "gauntlet/report/html_report.h"

#include <cmath>
#include <set>
#include <cstdio>
#include <string>
#include <vector>

#include "gauntlet/cases/contract_scope.h"
#include "gauntlet/run/report_text.h"
#include "gauntlet/audit/results_db.h"
#include "gauntlet/run/root_cause.h"
#include "gauntlet/run/standard_check.h"
#include "html_report_assets.h"

namespace gauntlet {

namespace {

std::string h(const std::string& s) { return xml_escape(s); }

// JSON inside <script>: a "</script>" (or "<!--") in any string would end the element early, so
// every < > & is written as its \u escape, which JSON.parse reads back unchanged.
std::string script_json(const nlohmann::json& j) {
  const std::string text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '<') out += "\\u003c";
    else if (c == '>') out += "\\u003e";
    else if (c == '&') out += "\\u0026";
    else out += c;
  }
  return out;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// The geometric-mean speedup over a kernel's timed dtypes, "" when the timing gate did not pass.
std::string kernel_speedup(const nlohmann::json& k) {
  std::vector<double> speedups, utilizations;
  timing_figures(k, &speedups, &utilizations);
  if (speedups.empty()) return "";
  double logs = 0;
  for (double x : speedups) logs += std::log(x);
  return fmt("%.2f\u00d7", std::exp(logs / double(speedups.size())));
}

// A failing gate: name, status, category, whether its deciding case lay outside the kernel's
// contract, its message (long ones folded), the replay command.
std::string failing_gate(const std::string& name, const std::string& status, const std::string& category,
                         const std::string& message, const std::string& replay, bool out_of_contract = false) {
  std::string out = "<div class=\"gate\"><span class=\"name\">" + h(name) + "</span><span class=\"status " + h(status) +
                    "\">" + h(status) + "</span>";
  if (!category.empty()) out += "<span class=\"cat\">" + h(category) + "</span>";
  // Why the kernel is unsafe rather than failing: this gate failed only on a layout, rank or shape
  // relation the kernel does not declare.
  if (out_of_contract)
    out += "<span class=\"scope out-of-contract\" title=\"the deciding case lies outside the kernel's declared "
           "contract\">outside its contract</span>";
  const size_t kShort = 240;
  if (message.size() <= kShort && message.find('\n') == std::string::npos) {
    out += "<div class=\"msg\">" + h(message) + "</div>";
  } else {
    const std::string first = message.substr(0, std::min(message.find('\n'), kShort));
    out += "<details><summary>" + h(first) + " \u2026</summary><div class=\"msg\">" + h(message) + "</div></details>";
  }
  if (!replay.empty()) out += "<code class=\"replay\">" + h(replay_command(replay)) + "</code>";
  return out + "</div>";
}

// The keys of the JSONL lines' own fields ("model", "tag", ...) over all records: one column each.
std::vector<std::string> field_columns(const nlohmann::json& kernels) {
  std::set<std::string> keys;
  if (kernels.is_array())
    for (const nlohmann::json& k : kernels)
      if (k.is_object() && k.contains("entry_fields") && k["entry_fields"].is_object())
        for (const auto& [key, v] : k["entry_fields"].items()) keys.insert(key);
  return {keys.begin(), keys.end()};
}

std::string field_cell(const nlohmann::json& k, const std::string& key) {
  if (!k.contains("entry_fields") || !k["entry_fields"].is_object() || !k["entry_fields"].contains(key))
    return "<td><span class=\"none\">\u2014</span></td>";
  const nlohmann::json& v = k["entry_fields"][key];
  return "<td>" + h(v.is_string() ? v.get<std::string>() : v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)) +
         "</td>";
}

// The standard check's cell: its verdict, the reason on hover; a dash when the kernel has none.
std::string check_cell(const nlohmann::json& k) {
  auto c = k.contains("standard_check") ? standard_check_from_json(k["standard_check"]) : std::nullopt;
  if (!c) return "<td><span class=\"none\">\u2014</span></td>";
  return "<td><span class=\"check " + h(c->verdict) + "\" title=\"" + xml_escape(c->check + ": " + c->reason, true) + "\">" +
         h(c->verdict) + "</span></td>";
}

// The standard check against gauntlet (standard_check.h's table), rendered here so it reads without
// script; nothing when no kernel carries a standard check.
std::string check_matrix(const nlohmann::json& t) {
  const int compared = t.value("compared", 0), errors = t.value("check_error", 0), not_run = t.value("not_run", 0);
  if (compared + errors == 0) return "";
  std::string out = "<section class=\"card\" id=\"standard-check\"><h2>Standard check against gauntlet</h2>"
                    "<table class=\"matrix\"><thead><tr><th></th><th>gauntlet pass</th><th>unsafe</th>"
                    "<th>fail or error</th></tr></thead><tbody>";
  for (const char* row : {"accept", "reject"}) {
    out += "<tr><th>standard check " + std::string(row) + "s</th>";
    for (const char* column : {"pass", "unsafe", "fail"}) {
      const int n = t[row].value(column, 0);
      const bool flagged = std::string(row) == "reject" && std::string(column) == "pass" && n > 0;
      out += "<td" + std::string(flagged ? " class=\"flagged\"" : "") + " data-cell=\"" + row + "-" + column + "\">" +
             std::to_string(n) + "</td>";
    }
    out += "</tr>";
  }
  out += "</tbody></table><p class=\"note\">KernelBench's own check for Python modules (5 trials of get_inputs(), "
         "allclose atol = rtol = 1e-2 against Model), kbcheck for manifests (5 trials of U[0,1) inputs at one shape, "
         "allclose 1e-2 against the library op). " + std::to_string(compared) + " kernels compared";
  if (errors) out += "; " + std::to_string(errors) + " whose standard check could not run";
  if (not_run) out += "; " + std::to_string(not_run) + " without one";
  out += ". Kernels the standard check rejects and gauntlet passes lead the table below, flagged: each is a gauntlet "
         "false negative or a false alarm of the standard check.</p></section>\n";
  return out;
}

std::string kernel_row(const nlohmann::json& k, const std::vector<std::string>& fields, bool checks) {
  std::string verdict = json_text(k, "verdict");
  if (verdict.empty()) verdict = "incomplete";
  const std::string label = record_label(k);
  std::string failures;
  const std::string entry_error = json_text(k, "entry_error");
  if (!entry_error.empty()) failures += failing_gate("entry", "error", "", entry_error, "");
  // A kernel that did not build errors in every gate with the same message: one entry with the
  // compiler's output says it once.
  const nlohmann::json build = k.contains("build") && k["build"].is_object() ? k["build"] : nlohmann::json::object();
  const bool build_failed = build.contains("ok") && build["ok"].is_boolean() && !build["ok"].get<bool>();
  if (build_failed) {
    const std::string log = json_text(build, "log_head");
    failures += failing_gate("build", "error", "build-error", json_text(build, "error") + (log.empty() ? "" : "\n" + log), "");
  }
  int gates = 0;
  if (k.contains("gates") && k["gates"].is_array()) {
    for (const nlohmann::json& g : k["gates"]) {
      if (!g.is_object()) continue;
      ++gates;
      const std::string status = json_text(g, "status");
      if (status == "pass" || status == "skip") continue;
      if (build_failed && json_text(g, "category") == "build-error") continue;
      // A record without a scope predates scopes: its failure counts as in-contract. A harness-error
      // is gauntlet's fault whatever case it ran (contract_scope.h's fails_in_contract).
      const bool out_of_contract = status != "harness-error" && json_text(g, "scope") == kOutOfContract;
      failures += failing_gate(json_text(g, "name"), status, json_text(g, "category"), json_text(g, "message"),
                               json_text(g, "replay"), out_of_contract);
    }
  }
  if (failures.empty())
    failures = verdict == "incomplete" ? "<span class=\"none\">" + std::to_string(gates) + " gates stored so far</span>"
                                       : "<span class=\"none\">none</span>";
  // A failing kernel leads with its one root cause (root_cause.h) before the gates it fans out to.
  if ((verdict == "fail" || verdict == "error" || verdict == "unsafe") && k.contains("root_cause") &&
      k["root_cause"].is_object())
    failures = "<div class=\"cause\"><span class=\"name\">root cause</span> " + h(root_cause_line(k["root_cause"])) +
               "</div>" + failures;
  std::string hash = json_text(k, "kernel_hash").substr(0, 12);
  std::string out = "<tr data-verdict=\"" + h(verdict) + "\" data-op=\"" + h(json_text(k, "op")) + "\">";
  out += "<td class=\"kernel\">" + h(label) + (hash.empty() ? "" : "<br><small class=\"none\">" + h(hash) + "</small>") +
         "</td>";
  for (const std::string& f : fields) out += field_cell(k, f);
  out += "<td>" + h(json_text(k, "op")) + "</td>";
  out += "<td><span class=\"verdict " + h(verdict) + "\">" + h(verdict) + "</span>";
  if (standard_check_flags(k))
    out += "<br><span class=\"flag\" title=\"a gauntlet false negative or a false alarm of the standard check\">"
           "standard check rejects</span>";
  out += "</td>";
  if (checks) out += check_cell(k);
  const std::string speedup = kernel_speedup(k);
  out += "<td>" + (speedup.empty() ? std::string("<span class=\"none\">\u2014</span>") : h(speedup)) + "</td>";
  out += "<td>" + failures + "</td></tr>\n";
  return out;
}

std::string plot(const std::string& kind, const std::string& title, const std::string& legend, const std::string& note) {
  return "<section class=\"card\"><h2>" + h(title) + "</h2><svg class=\"plot\" data-plot=\"" + kind +
         "\" role=\"img\" aria-label=\"" + h(title) + "\" xmlns=\"http://www.w3.org/2000/svg\"></svg>" + legend +
         "<p class=\"note\">" + h(note) + "</p></section>\n";
}

std::string legend(const std::vector<std::string>& keys) {
  std::string out = "<div class=\"legend\">";
  for (const std::string& k : keys) out += "<span><i class=\"" + k + "\"></i>" + k + "</span>";
  return out + "</div>";
}

}  // namespace

std::string render_html_report(const nlohmann::json& kernels, const HtmlReportOptions& options) {
  const nlohmann::json summary = report_summary(kernels);
  std::string page = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                     "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                     "<meta name=\"generator\" content=\"gauntlet report\">\n<title>" +
                     h(options.title) + "</title>\n<style>" + html_assets::kStyle + "</style>\n</head>\n<body>\n";
  page += "<header><h1>" + h(options.title) + "</h1><p class=\"meta\">";
  std::string meta;
  if (!options.source.empty()) meta += h(options.source);
  if (!options.generated.empty()) meta += (meta.empty() ? "" : " \u00b7 ") + std::string("generated ") + h(options.generated);
  page += meta + "</p>\n<div class=\"tiles\">";
  page += "<div class=\"tile\"><b>" + std::to_string(summary["kernels"].get<int>()) + "</b>kernels</div>";
  for (const char* v : {"pass", "unsafe", "fail", "error", "incomplete"}) {
    const int n = summary["verdicts"].value(v, 0);
    if (n || std::string(v) != "incomplete")
      page += "<div class=\"tile " + std::string(v) + "\"><b>" + std::to_string(n) + "</b>" + v + "</div>";
  }
  page += "</div></header>\n<main>\n<noscript><p>The plots are drawn by the page's script; the kernel table below "
          "does not need it.</p></noscript>\n";
  page += check_matrix(summary["standard_check"]);
  const bool checks = summary["standard_check"].value("compared", 0) + summary["standard_check"].value("check_error", 0) > 0;
  page += "<div class=\"grid\">\n";
  // Which gates fail only on cases the kernels do not declare: in the note, so it reads without script.
  std::string outside;
  for (const nlohmann::json& g : summary["gates"])
    if (g.value("out_of_contract", 0) > 0)
      outside += (outside.empty() ? "" : ", ") + g.value("name", std::string()) + " " +
                 std::to_string(g.value("out_of_contract", 0));
  page += plot("gates", "Gate verdicts and failure rates", legend({"pass", "fail", "error", "harness-error", "skip"}),
               "Failure rate: fail, error and harness-error over the gates that ran (skips excluded)." +
                   (outside.empty() ? std::string()
                                    : " Failing only outside the kernel's declared contract (counted in fail and error): " +
                                          outside + "."));
  page += plot("categories", "Failure categories", "", "Failing gate verdicts by category.");
  page += plot("ops", "Kernels per op", legend({"pass", "unsafe", "fail", "error", "incomplete"}),
               "Kernel verdicts by op (unsafe: right inside the declared contract, wrong or crashing outside it).");
  page += plot("speedup", "Speedup over the baseline (timing gate: the ATen op; eager Model for Python modules)", "",
               "One value per timed dtype of each kernel whose timing gate passed.");
  page += plot("utilization", "Roofline utilization (timing gate)", "",
               "Roofline time over the measured median: the fraction of the device's measured peak reached.");
  page += "</div>\n<section class=\"card\"><h2>Kernels</h2><div class=\"filters\">"
          "<label>verdict <select id=\"filter-verdict\"><option value=\"all\">all</option>"
          "<option value=\"failing\">not passing</option><option value=\"pass\">pass</option>"
          "<option value=\"unsafe\">unsafe</option>"
          "<option value=\"fail\">fail</option><option value=\"error\">error</option>"
          "<option value=\"incomplete\">incomplete</option></select></label>"
          "<label>op <select id=\"filter-op\"><option value=\"all\">all</option></select></label>"
          "<input id=\"filter-text\" type=\"search\" placeholder=\"search kernels, gates, messages\">"
          "<span id=\"filter-count\" class=\"none\"></span></div>\n"
          "<table id=\"kernels\"><thead><tr><th>kernel</th>";
  const std::vector<std::string> fields = field_columns(kernels);
  for (const std::string& f : fields) page += "<th>" + h(f) + "</th>";
  page += std::string("<th>op</th><th>verdict</th>") + (checks ? "<th>standard check</th>" : "") +
          "<th>speedup</th><th>root cause, failing gates (message, replay command)</th></tr></thead>\n<tbody>\n";
  // The kernels the standard check rejects and gauntlet passes first, the rest in record order.
  if (kernels.is_array())
    for (bool flagged : {true, false})
      for (const nlohmann::json& k : kernels)
        if (k.is_object() && standard_check_flags(k) == flagged) page += kernel_row(k, fields, checks);
  page += "</tbody></table></section>\n</main>\n<script type=\"application/json\" id=\"gauntlet-summary\">" +
          script_json(summary) + "</script>\n<script>" + html_assets::kScript + "</script>\n</body>\n</html>\n";
  return page;
}

}  // namespace gauntlet
