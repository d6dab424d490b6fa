// JUnit XML for CI systems (SPEC job 3, "Gate a generated kernel before merge"): one test case per gate.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace gauntlet {

// Renders per-kernel reports in the `verify --json` format (report_to_json), either one object or an
// array of them (selftest --json, an audit database's records), as a JUnit XML document: a
// <testsuite> per kernel, a <testcase> per gate. `fail` gates get <failure>, `error` and
// `harness-error` gates <error>, `skip` gates <skipped>; the element's body is the gate's message
// and, when the gate wrote a replay file, the `gauntlet replay PATH` command. `hostname` and
// `timestamp` (ISO 8601) go on each testsuite; empty leaves them out.
std::string junit_xml(const nlohmann::json& reports, const std::string& hostname = "",
                      const std::string& timestamp = "");

// Writes junit_xml(...) with this host's name and the current UTC time to `path`. False with
// *error (one line) when the file cannot be written.
bool write_junit_file(const nlohmann::json& reports, const std::string& path, std::string* error);

}  // namespace gauntlet
