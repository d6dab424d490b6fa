// Verifying one kernel: build it, run the gates in their own children, and report.
#pragma once
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gauntlet/builder.h"
#include "gauntlet/gate.h"
#include "gauntlet/manifest.h"
#include "gauntlet/sandbox.h"
#include "gauntlet/schema.h"

namespace gauntlet {

struct VerifyOptions {
  uint64_t seed = 0;
  int budget = 1;
  std::vector<std::string> gates;        // empty: all, in order
  std::string replay_dir = "gauntlet-out/replays";
  bool progress = true;                  // a line per gate on stderr as it finishes
};

struct KernelReport {
  std::string verdict;                   // "pass" | "fail" | "error"
  std::string op, source, kernel_hash, schema_hash;
  uint64_t seed = 0;
  std::vector<GateVerdict> gates;
  BuildResult build;
  nlohmann::json environment;
  double seconds = 0;
};

// Loads the schema named by the manifest. nullopt + *error (one line) when unknown or invalid.
std::optional<OpSchema> find_schema(const std::string& op, std::string* error);

// Verifies one kernel. Returns nullopt with *error for harness problems (exit 2): unknown op or
// dtype, unreadable files. Kernel problems (build errors included) are verdicts, not errors.
std::optional<KernelReport> verify_kernel(const KernelManifest& manifest, const VerifyOptions& options,
                                          Launcher& launcher, std::string* error);

// The KernelBench-style check: 5 trials of U[0,1) inputs at one fixed shape in float32 (or the
// kernel's first dtype), accepted when shapes match and allclose(rtol=atol=1e-2) holds.
struct KbCheckResult {
  bool accepted = false;
  std::string reason;
};
std::optional<KbCheckResult> kb_style_check(const KernelManifest& manifest, Launcher& launcher, std::string* error);

nlohmann::json report_to_json(const KernelReport& r);
void print_report(const KernelReport& r, std::FILE* out);
// Process exit code for a report: 0 pass, 1 fail or error, 2 harness error in any gate.
int exit_code_for(const KernelReport& r);

}  // namespace gauntlet
