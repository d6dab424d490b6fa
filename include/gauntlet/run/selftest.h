// gauntlet selftest: runs every corpus kernel and checks its verdicts against what the corpus declares.
#pragma once
#include <cstdio>
#include <string>
#include <vector>

#include "gauntlet/sandbox/sandbox.h"
#include "gauntlet/run/verify.h"

namespace gauntlet {

struct SelftestOptions {
  std::string corpus_dir;            // default: the bundled corpus
  std::string filter;                // only manifests whose path contains this
  uint64_t seed = 1;                 // fixed: a self-test must be reproducible
  bool kbcheck = true;               // also run the KernelBench-style check where expect.kbcheck is set
  std::string json_path;             // all reports as a JSON array
  VerifyOptions verify;
};

struct SelftestRow {
  std::string manifest, op, expected, verdict, kbcheck_expected, kbcheck_got;
  std::vector<std::string> mismatches;  // empty: as declared
  KernelReport report;
};

// Every *.json manifest under dir, sorted.
std::vector<std::string> find_manifests(const std::string& dir);
// Checks one report against the manifest's "expect" record; returns the mismatches.
std::vector<std::string> check_expectations(const nlohmann::json& expect, const KernelReport& report);
// Runs the corpus; prints the verdict table. Returns 0 when every kernel matches, 1 otherwise, 2 on harness error.
int run_selftest(const SelftestOptions& options, Launcher& launcher, std::FILE* out);
std::string default_corpus_dir();

}  // namespace gauntlet
