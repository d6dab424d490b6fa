// Helpers for end-to-end tests: run the real gauntlet binary and capture what it prints.
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gauntlet::e2e {

struct RunResult {
  int exit_code = -1;   // -1: killed by a signal or timed out
  std::string out, err;
  double seconds = 0;
};

// Runs GAUNTLET_BIN with `args` (no shell), killing it after `timeout_seconds`.
RunResult run_gauntlet(const std::vector<std::string>& args, int timeout_seconds = 600);
// Starts GAUNTLET_BIN with `args` in a process group of its own (as a shell's foreground job),
// stdout and stderr to the file `log`; the caller waits for it or kills it.
pid_t spawn_gauntlet(const std::vector<std::string>& args, const std::string& log);
// The first column of the first row `sql` gives on the SQLite database `db`, opened read-only;
// -1 when there is none.
int db_scalar(const std::string& db, const std::string& sql);
std::string source_dir();
std::string temp_dir();  // a fresh directory for one test
void write_file(const std::string& path, const std::string& text);
std::string read_file(const std::string& path);
// Whether the interpreter the launcher runs Python modules with ($GAUNTLET_PYTHON, else
// /usr/bin/python3, else /usr/local/bin/python3) imports torch; *why says why not (docs/modules.md).
bool python_with_torch(std::string* why);
// `gauntlet verify ARGS --seed 1 --quiet`, its JSON report and replay files in a fresh directory;
// report is discarded (not an object) when gauntlet wrote none.
struct Verified {
  int exit_code = -1;
  std::string log;  // stdout and stderr
  nlohmann::json report;
};
Verified verify_report(const std::vector<std::string>& args);
// The report's verdict of gate `name`; a null value when the report has no such gate.
const nlohmann::json& report_gate(const nlohmann::json& report, const std::string& name);
// Skips the test, with the reason, where the Python worker's interpreter has no torch.
#define REQUIRE_PYTHON_TORCH()                                          \
  do {                                                                  \
    std::string why_;                                                   \
    if (!gauntlet::e2e::python_with_torch(&why_)) GTEST_SKIP() << why_; \
  } while (0)

}  // namespace gauntlet::e2e
