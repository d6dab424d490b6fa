// `gauntlet report DB`: loads an audit's records and writes the HTML page, JUnit XML or JSON.
#include "gauntlet/report/report_command.h"

#include <ctime>
#include <fstream>
#include <iostream>
#include <sstream>

#include "gauntlet/report/html_report.h"
#include "gauntlet/report/junit.h"
#include "gauntlet/audit/results_db.h"

namespace gauntlet {

namespace {

bool write_text(const std::string& path, const std::string& text, std::string* error) {
  if (path == "-") {
    std::cout << text << std::flush;
    return true;
  }
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) return (*error = "cannot write " + path, false);
  return true;
}

std::string utc_now() {
  char stamp[32] = {0};
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S UTC", &utc);
  return stamp;
}

}  // namespace

std::optional<nlohmann::json> load_kernel_reports(const std::string& input, std::string* error) {
  std::ifstream in(input, std::ios::binary);
  if (!in) return (*error = input + ": cannot read", std::nullopt);
  std::string head(16, '\0');
  in.read(&head[0], 16);
  head.resize(size_t(in.gcount()));
  // Every SQLite 3 database starts with these 16 bytes; anything else is read as JSON.
  if (head == std::string("SQLite format 3\0", 16)) {
    in.close();
    std::string why;
    nlohmann::json records = read_kernel_reports(input, &why);
    if (!why.empty()) return (*error = why.find(input) == std::string::npos ? input + ": " + why : why, std::nullopt);
    return records;
  }
  in.clear();  // a file shorter than the header hit EOF above
  in.seekg(0);
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, false);
  if (j.is_discarded() || !(j.is_array() || j.is_object()))
    return (*error = input + ": neither a gauntlet results database nor a JSON report (verify/selftest --json)",
            std::nullopt);
  if (j.is_object()) j = nlohmann::json::array({j});
  // A record has its gates, or (an audit's entry that is not a kernel) at least its verdict.
  for (const nlohmann::json& k : j)
    if (!k.is_object() || !(k.contains("gates") || k.contains("verdict")))
      return (*error = input + ": a JSON report is an array of per-kernel records with 'gates'; found another value",
              std::nullopt);
  return j;
}

int run_report(const ReportOptions& options, std::FILE* out) {
  std::string error;
  auto fail = [&](const std::string& msg) {
    std::fprintf(stderr, "gauntlet: error: %s\n", msg.c_str());
    return 2;
  };
  auto records = load_kernel_reports(options.input, &error);
  if (!records) return fail(error);
  std::string html_path = options.html_path;
  if (html_path.empty() && options.junit_path.empty() && options.json_path.empty()) html_path = "report.html";
  int pass = 0, failed = 0, errors = 0, unsafe = 0;
  for (const nlohmann::json& k : *records) {
    const std::string v = k.value("verdict", std::string());
    pass += v == "pass", failed += v == "fail", errors += v == "error", unsafe += v == "unsafe";
  }
  // Status lines go to stderr when a document itself goes to standard output.
  std::FILE* status = options.json_path == "-" || html_path == "-" ? stderr : out;
  // Unsafe kernels (right inside their contracts, wrong outside) named only when there are any, so
  // the line reads as before for records without them.
  const std::string counts = std::to_string(records->size()) + " kernels (" + std::to_string(pass) + " pass, " +
                             std::to_string(failed) + " fail, " + std::to_string(errors) + " error" +
                             (unsafe ? ", " + std::to_string(unsafe) + " unsafe)" : std::string(")"));
  if (!html_path.empty()) {
    HtmlReportOptions ho;
    ho.title = options.title;
    ho.source = options.input;
    ho.generated = utc_now();
    if (!write_text(html_path, render_html_report(*records, ho), &error)) return fail(error);
    std::fprintf(status, "report: %s: %s\n", html_path.c_str(), counts.c_str());
  }
  if (!options.junit_path.empty()) {
    if (!write_junit_file(*records, options.junit_path, &error)) return fail(error);
    std::fprintf(status, "junit: %s: %s\n", options.junit_path.c_str(), counts.c_str());
  }
  if (!options.json_path.empty()) {
    if (!write_text(options.json_path, records->dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n",
                    &error))
      return fail(error);
    if (options.json_path != "-") std::fprintf(status, "json: %s: %s\n", options.json_path.c_str(), counts.c_str());
  }
  return 0;
}

}  // namespace gauntlet
