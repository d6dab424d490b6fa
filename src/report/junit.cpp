// JUnit XML from per-kernel reports: a <testsuite> per kernel, a <testcase> per gate (see junit.h).
#include "gauntlet/report/junit.h"

#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <fstream>

#include "gauntlet/cases/contract_scope.h"
#include "gauntlet/run/report_text.h"

namespace gauntlet {

namespace {

double number(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", s < 0 ? 0.0 : s);
  return buf;
}

std::string attr(const std::string& s) { return xml_escape(s, true); }

// "softmax.softmax_fast": CI viewers split the class name at its last dot into a package (the op)
// and a class (the kernel's file stem), so each kernel's gates group under its op.
std::string class_name(const nlohmann::json& k) {
  std::string source = json_text(k, "source");
  if (source.empty()) source = json_text(k, "entry");
  const size_t slash = source.find_last_of('/');
  if (slash != std::string::npos) source = source.substr(slash + 1);
  const size_t dot = source.find_last_of('.');
  if (dot != std::string::npos && dot > 0) source = source.substr(0, dot);
  for (char& c : source)
    if (c == '.') c = '_';
  const std::string op = json_text(k, "op");
  return (op.empty() ? "gauntlet" : op) + "." + (source.empty() ? "kernel" : source);
}

struct Counts {
  int tests = 0, failures = 0, errors = 0, skipped = 0;
  double time = 0;
};

std::string counts_attrs(const Counts& c) {
  return " tests=\"" + std::to_string(c.tests) + "\" failures=\"" + std::to_string(c.failures) + "\" errors=\"" +
         std::to_string(c.errors) + "\" skipped=\"" + std::to_string(c.skipped) + "\" time=\"" + seconds(c.time) + "\"";
}

// One gate as a <testcase>; adds it to `counts`.
std::string testcase(const nlohmann::json& k, const nlohmann::json& g, Counts* counts) {
  const std::string status = json_text(g, "status"), category = json_text(g, "category"), message = json_text(g, "message");
  const std::string replay = json_text(g, "replay");
  counts->tests++;
  counts->time += number(g, "seconds");
  std::string out = "    <testcase classname=\"" + attr(class_name(k)) + "\" name=\"" + attr(json_text(g, "name")) +
                    "\" time=\"" + seconds(number(g, "seconds")) + "\"";
  const char* element = nullptr;
  if (status == "fail") element = "failure", counts->failures++;
  else if (status == "error" || status == "harness-error") element = "error", counts->errors++;
  if (element) {
    // A failure outside the kernel's declared contract makes it unsafe, not failing: CI lists show
    // only the message and type, so the message says so. A record without a scope predates scopes
    // (in-contract); a harness-error is gauntlet's fault whatever case it ran.
    const bool out_of_contract = status != "harness-error" && json_text(g, "scope") == kOutOfContract;
    const std::string tagged = (out_of_contract ? "[out-of-contract] " : "") + message;
    // The first line of the message is what viewers show in a list; the body holds all of it.
    const std::string headline = tagged.substr(0, tagged.find('\n'));
    std::string body = tagged;
    if (!replay.empty()) body += "\n\nreplay: " + replay_command(replay);
    out += ">\n      <" + std::string(element) + " message=\"" + attr(headline) + "\" type=\"" +
           attr(category.empty() ? status : category) + "\">" + xml_escape(body) + "</" + element + ">\n    </testcase>\n";
  } else if (status == "skip") {
    counts->skipped++;
    out += ">\n      <skipped message=\"" + attr(message) + "\"/>\n    </testcase>\n";
  } else if (status == "pass") {
    out += message.empty() ? "/>\n" : ">\n      <system-out>" + xml_escape(message) + "</system-out>\n    </testcase>\n";
  } else {
    // A status this version does not know is not evidence the kernel is right.
    counts->errors++;
    out += ">\n      <error message=\"" + attr("unknown gate status '" + status + "'") + "\" type=\"harness-error\">" +
           xml_escape(message) + "</error>\n    </testcase>\n";
  }
  return out;
}

std::string testsuite(const nlohmann::json& k, int id, const std::string& hostname, const std::string& timestamp,
                      Counts* total) {
  Counts c;
  std::string cases;
  auto gates = k.find("gates");
  if (gates != k.end() && gates->is_array())
    for (const nlohmann::json& g : *gates)
      if (g.is_object()) cases += testcase(k, g, &c);
  // An audit entry that is not a verifiable kernel (unreadable, broken manifest) has no gates;
  // it must still show up red rather than as an empty, passing suite.
  const std::string entry_error = json_text(k, "entry_error");
  if (c.tests == 0 && !entry_error.empty())
    cases += testcase(k, {{"name", "entry"}, {"status", "error"}, {"category", "load-error"}, {"message", entry_error}}, &c);
  // Gates run in parallel (--jobs): the kernel's wall-clock time, when recorded, is the suite's.
  if (number(k, "seconds") > 0) c.time = number(k, "seconds");
  // Audit records name their corpus entry; a verify report only its source.
  const std::string label = json_text(k, "entry").empty() ? json_text(k, "source") : json_text(k, "entry");
  const std::string name = json_text(k, "op").empty() ? label : json_text(k, "op") + ": " + label;
  std::string out = "  <testsuite id=\"" + std::to_string(id) + "\" name=\"" + attr(name) + "\"" + counts_attrs(c);
  if (!hostname.empty()) out += " hostname=\"" + attr(hostname) + "\"";
  if (!timestamp.empty()) out += " timestamp=\"" + attr(timestamp) + "\"";
  out += ">\n    <properties>\n";
  for (const char* key : {"verdict", "op", "source", "kernel_hash", "schema_hash", "seed"})
    out += "      <property name=\"" + std::string(key) + "\" value=\"" + attr(json_text(k, key)) + "\"/>\n";
  out += "    </properties>\n" + cases;
  // A kernel that did not build fails every gate with the same one-line error; the compiler's
  // output is what the author needs, so it goes beside them.
  auto build = k.find("build");
  const bool build_failed = build != k.end() && build->is_object() && build->contains("ok") &&
                            (*build)["ok"].is_boolean() && !(*build)["ok"].get<bool>();
  if (build_failed)
    out += "    <system-err>" + xml_escape(json_text(*build, "error") + "\n" + json_text(*build, "log_head")) + "</system-err>\n";
  out += "  </testsuite>\n";
  total->tests += c.tests, total->failures += c.failures, total->errors += c.errors, total->skipped += c.skipped;
  total->time += c.time;
  return out;
}

}  // namespace

std::string junit_xml(const nlohmann::json& reports, const std::string& hostname, const std::string& timestamp) {
  std::vector<nlohmann::json> kernels;
  if (reports.is_array()) {
    for (const nlohmann::json& k : reports)
      if (k.is_object()) kernels.push_back(k);
  } else if (reports.is_object()) {
    kernels.push_back(reports);
  }
  Counts total;
  std::string suites;
  for (size_t i = 0; i < kernels.size(); ++i) suites += testsuite(kernels[i], int(i), hostname, timestamp, &total);
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"gauntlet\"" + counts_attrs(total) + ">\n" +
         suites + "</testsuites>\n";
}

bool write_junit_file(const nlohmann::json& reports, const std::string& path, std::string* error) {
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = 0;
  char stamp[32] = {0};
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &utc);  // the Ant schema's form: no zone
  std::ofstream out(path, std::ios::binary);
  out << junit_xml(reports, host[0] ? host : "localhost", stamp);
  out.close();
  if (!out) return (*error = "cannot write " + path, false);
  return true;
}

}  // namespace gauntlet
