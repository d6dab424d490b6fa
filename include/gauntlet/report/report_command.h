// `gauntlet report DB`: an audit's records as a self-contained HTML page, JUnit XML or JSON.
#pragma once
#include <cstdio>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace gauntlet {

struct ReportOptions {
  std::string input;       // a results database (gauntlet audit), or a JSON report (verify/selftest --json)
  std::string html_path;   // -o; empty: report.html unless only --junit or --json was asked for
  std::string junit_path;  // --junit
  std::string json_path;   // --json ("-": standard output)
  std::string title = "gauntlet report";
};

// The per-kernel records in `input`: read_kernel_reports for an SQLite results database (told
// apart by the file's SQLite header), else the file parsed as JSON, one record or an array of them.
// nullopt + *error (one line naming the file) when it is neither.
std::optional<nlohmann::json> load_kernel_reports(const std::string& input, std::string* error);

// Runs the command; prints one line per file written to `out`. Exit status: 0 written, 2 bad input
// (unreadable or unrecognized input, unwritable output), with one line on stderr.
int run_report(const ReportOptions& options, std::FILE* out);

}  // namespace gauntlet
