// The flags that name a kernel and its sandbox (verify, kbcheck, and the sandbox flags of the others).
#pragma once
#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

#include "gauntlet/sandbox/sandbox.h"
#include "gauntlet/schema/manifest.h"

namespace gauntlet {

struct VerifyFlags {
  std::string kernel, op, source, entry, device, dtypes, json_path, memory = "4G", gates, replay_dir = "gauntlet-out/replays";
  std::string junit_path;
  std::vector<std::string> attrs;
  std::string layouts;                  // --layouts a,b
  std::vector<std::string> equal_dims;  // --equal-dims M,K,N (repeatable)
  std::vector<std::string> ranks;       // --rank x=2 or x=2,3 (repeatable)
  bool allow_unsafe = false;
  uint64_t seed = 0;
  int timeout = 60, budget = 1, gpu = 0, jobs = 0, gpu_jobs = 4, oracle_threads = 0, build_timeout = 600;
  double gpu_turn_bound = 1.0;
  bool seed_given = false, no_zygote = false, quiet = false, dtypes_given = false, entry_given = false;
};

// Builds the manifest from a kernel.json, or from --op/--kernel flags (flags override the file).
std::optional<KernelManifest> manifest_from_flags(const VerifyFlags& f, std::string* error);
// "a,b,c" -> {"a", "b", "c"}; "" -> {}.
std::vector<std::string> split_commas(const std::string& s);
// --jobs: gate processes at once; 0 (the default) is one per online CPU, at most the twelve gates.
int gate_jobs(int flag);
// "" when failing cases can be written under `dir` (an existing writable directory, or a path
// whose nearest existing ancestor is one); else why not.
std::string replay_dir_problem(const std::string& dir, const std::string& flag = "--replay-dir");
// The sandbox the flags ask for; *error (one line) when a flag's value is unusable.
SandboxOptions sandbox_from(const VerifyFlags& f, std::string* error);
// The flags naming a kernel and its limits, shared by verify and kbcheck.
void add_kernel_flags(CLI::App* c, VerifyFlags& f);

}  // namespace gauntlet
