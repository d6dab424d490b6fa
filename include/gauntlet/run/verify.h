// Verifying one kernel: build it, run the gates in their own children, and report.
#pragma once
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gauntlet/build/builder.h"
#include "gauntlet/run/gate_slots.h"
#include "gauntlet/cases/gate.h"
#include "gauntlet/schema/manifest.h"
#include "gauntlet/sandbox/sandbox.h"
#include "gauntlet/schema/schema.h"

namespace gauntlet {

struct VerifyOptions {
  uint64_t seed = 0;
  int budget = 1;
  std::vector<std::string> gates;        // empty: all, in order
  std::string replay_dir = "gauntlet-out/replays";
  bool progress = true;                  // a line per gate on stderr as it finishes
  // Gate processes of this kernel run at once (--jobs); timing always runs last and alone. 1:
  // one after another. Verdicts do not depend on it (every gate's cases come from its own seed).
  int jobs = 1;
  // The same for a CUDA kernel's gates (--gpu-jobs, 4 on the command line): their children start
  // side by side and execute on the GPU one at a time (GpuTurn, gpu_turn.h).
  int gpu_jobs = 1;
  // Shared slots when several kernels are verified at once; null: this kernel's own `jobs` slots.
  GateSlots* slots = nullptr;
  // Slots lent by other processes while they idle (GateSlots), added to a CPU kernel's own `jobs`
  // slots; an audit's CPU lanes lend theirs when the corpus has nothing left for them.
  const std::atomic<int>* lent_slots = nullptr;
  // Entered (true) and left (false) around each gate's run, on the gate's thread, once it has its
  // slot: an audit's CPU lanes hold their host lock shared only while a gate runs, so a timing
  // gate waiting for the machine gets it after the gates in flight, not after whole kernels.
  std::function<void(bool)> gate_section;
  // Work stealing between an audit's CPU lanes (audit_lane.cpp): called on the gate's thread once
  // it has its slot, just before it would run; false when another lane process has taken the gate
  // meanwhile. Such a gate's verdict comes from `await_taken` once that lane has stored it.
  std::function<bool(const std::string& gate)> claim;
  std::function<GateVerdict(const std::string& gate)> await_taken;
  // Whether a timeout (an out-of-memory) of this kernel has already recurred with the gate alone
  // in its lane (see gate_runner.cpp); shared memory when lanes that took some of its gates must know.
  // Null: this call's own flags.
  std::atomic<bool>* hang_shown_alone = nullptr;
  std::atomic<bool>* oom_shown_alone = nullptr;
  // Resuming (audit): gates whose verdicts are already stored; they are not run again.
  std::map<std::string, GateVerdict> known;
  // Called once per gate that ran, as its verdict is final (serialized; from a gate thread).
  std::function<void(const GateVerdict&)> on_gate;
};

struct KernelReport {
  std::string verdict;                   // "pass" | "unsafe" | "fail" | "error" (contract_scope.h)
  std::string op, source, kernel_hash, schema_hash;
  uint64_t seed = 0;
  std::vector<GateVerdict> gates;
  BuildResult build;
  nlohmann::json environment;
  nlohmann::json root_cause;  // root_cause.h: null when no gate failed
  double seconds = 0;
};

// Loads the schema named by the manifest. nullopt + *error (one line) when unknown or invalid.
// A Python module's build step (module_build.h, docs/modules.md "Builds"): so_path is the module's
// absolute path, which the Python worker imports; the kernel hash is the file's sha256; the
// extensions it compiles are built once and *manifest's module_build_dir names them for its children.
BuildResult python_module_build(KernelManifest* manifest, Launcher& launcher);
std::optional<OpSchema> find_schema(const std::string& op, std::string* error);

// Why this machine cannot verify the kernel at all ("" when it can): a CUDA kernel without a CUDA
// device, or an op whose inputs need a dtype this LibTorch lacks (float8_e4m3fn before PyTorch
// 2.1). verify exits 2 with it ("nothing was verified"), selftest and audit skip the kernel with it.
std::string why_not_runnable_here(const KernelManifest& manifest);
// Its second half: only the dtypes ("" when this LibTorch has every one the kernel's inputs need).
std::string dtypes_unavailable_for(const KernelManifest& manifest);

// Verifies one kernel. Returns nullopt with *error for harness problems (exit 2): unknown op or
// dtype, unreadable files. Kernel problems (build errors included) are verdicts, not errors.
std::optional<KernelReport> verify_kernel(const KernelManifest& manifest, const VerifyOptions& options,
                                          Launcher& launcher, std::string* error);

// The KernelBench-style check: 5 trials of U[0,1) inputs at one fixed shape in float32 (or the
// kernel's first dtype), accepted when shapes match and allclose(rtol=atol=1e-2) holds.
// The one build request of a native kernel (its forward and backward entries) that verify, the
// KernelBench-style check and replay share, so that each finds the others' build in the cache.
BuildRequest native_build_request(const KernelManifest& m);

struct KbCheckResult {
  bool accepted = false;
  std::string reason;
  bool build_cache_hit = false;  // the check ran the build verify made (or would make), not its own
  int children = 0;              // sandboxed children it started: 1 once it reached its trials' child
  uint32_t hardware_queues = 0;  // that child's CUDA hardware queues (concurrent_gate_queues); 0: CPU
};
std::optional<KbCheckResult> kb_style_check(const KernelManifest& manifest, Launcher& launcher, std::string* error);

nlohmann::json report_to_json(const KernelReport& r);
// One gate's entry of report_to_json's "gates", and back (audit stores and resumes verdicts).
nlohmann::json gate_to_json(const GateVerdict& v);
std::optional<GateVerdict> gate_from_json(const nlohmann::json& g, std::string* error);
void print_report(const KernelReport& r, std::FILE* out);
// Process exit code for a report: 0 pass (and unsafe with allow_unsafe), 1 fail, error or unsafe,
// 2 harness error in any gate.
int exit_code_for(const KernelReport& r, bool allow_unsafe = false);

}  // namespace gauntlet
