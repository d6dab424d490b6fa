// gauntlet audit: a corpus verified kernel by kernel into a resumable SQLite database, in parallel.
#pragma once
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "gauntlet/schema/manifest.h"
#include "gauntlet/sandbox/sandbox.h"
#include "gauntlet/run/verify.h"

namespace gauntlet {

// One thing found in a corpus. Either a manifest to verify, or an entry that cannot be verified
// (unreadable, not a kernel, broken manifest), which the audit records as such and goes on.
struct CorpusEntry {
  std::string entry;                   // the path relative to the audited folder (or as given)
  std::optional<KernelManifest> manifest;
  std::string error;                   // set when manifest is not
  std::string kernel_hash;             // sha256 of the kernel source; for an error, of the entry itself
  std::string manifest_hash;           // of the manifest's contract; empty for an error
  // A JSONL line's identity beyond "file.jsonl:LINE": {"name", "line", "fields"} (name only when
  // the line has one, fields: its other keys, "model", "tag", ...); null for other entries.
  nlohmann::json info;
};

// Finds the kernels under `path`: a kernel.json manifest, a KernelBench .py module, a .jsonl file
// of {"ref", "candidate"} pairs, or a folder searched recursively for all three (a .py that some
// manifest names as its source is that manifest's kernel, not a module of its own; a .cpp or .cu
// that no manifest names is recorded as an entry error: nothing says which op it implements).
// `work_dir` receives the modules of JSONL inputs. Sorted by entry. Returns nullopt with a one-line
// *error only when `path` itself is unusable.
std::optional<std::vector<CorpusEntry>> discover_corpus(const std::string& path, const std::string& work_dir,
                                                        std::string* error);

// --shard i/n: the i-th of n disjoint parts of a corpus, by kernel hash (every shard of one corpus
// gets the same split on every machine; the copies of one kernel fall in the same shard).
struct Shard {
  int index = 0;
  int count = 1;
};
// Parses "i/n" (0 <= i < n). nullopt with *error otherwise.
std::optional<Shard> parse_shard(const std::string& text, std::string* error);
// The shard when --shard is not given: SLURM_ARRAY_TASK_ID (less SLURM_ARRAY_TASK_MIN) of
// SLURM_ARRAY_TASK_COUNT, else a Kubernetes indexed job's JOB_COMPLETION_INDEX of `count_flag`
// (or GAUNTLET_SHARD_COUNT); {0, 1} when none is set. nullopt with *error when the variables are
// incomplete or out of range.
std::optional<Shard> shard_from_environment(int count_flag, std::string* error);
// Which shard of `count` a kernel hash belongs to (its first 64 bits, modulo count).
int shard_of(const std::string& kernel_hash, int count);

// The GPU of each GPU lane: `per_gpu` lanes per GPU at most, no more lanes than `kernels`, dealt
// round-robin over `gpus` so that every GPU gets a lane before any gets a second (three kernels
// on --gpus 0,1 run on both GPUs, not three lanes on GPU 0).
std::vector<int> gpu_lane_plan(const std::vector<int>& gpus, int per_gpu, size_t kernels);

struct AuditOptions {
  std::string path;                    // the corpus
  std::string db_path = "gauntlet-audit.db";
  std::string json_path;               // --json: one record per kernel, as verify --json
  std::string work_dir = "gauntlet-out/audit-work";
  VerifyOptions verify;                // seed, budget, gates, replay_dir
  SandboxOptions sandbox;              // per gate process; gpu_index is set per GPU lane
  int jobs = 1;                        // CPU gate processes at once, across kernels
  std::vector<int> gpus;               // GPU lanes (--gpus); empty: GPU 0 when a CUDA device exists
  int gpu_lanes = 4;                   // CUDA kernels in flight per GPU (--gpu-jobs), one lane each
  // Gate processes in flight for each CUDA kernel of a GPU lane (--gpu-gate-jobs), as verify's
  // --gpu-jobs: their children start side by side and take turns on the GPU. With the default
  // 4 x 4 an audit keeps 16 children in flight per GPU, the configuration verify's throughput
  // batches found fastest (docs/gpu.md); 1 runs a kernel's gates one after another.
  int gpu_gate_jobs = 4;
  int build_jobs = 0;                  // Python modules' build steps at once (--build-jobs; 0: the core count)
  Shard shard;
  int progress_seconds = 10;           // a plain progress line this often when stderr is not a terminal
  // --standard-check (on; --no-standard-check: off): also run the field's standard check on every
  // kernel (standard_check.h) and store its verdict beside gauntlet's. A rerun runs it for complete
  // kernels stored without one, and only that.
  bool standard_check = true;
};

// Runs the audit and prints the summary table on `out` (progress goes to stderr). Exit status:
// 0 every kernel passes, 1 some kernel fails, errors or is not a verifiable kernel, 2 bad usage or a
// harness problem (the corpus path, the database).
int run_audit(const AuditOptions& options, std::FILE* out);

}  // namespace gauntlet
