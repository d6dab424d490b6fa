// The audit's progress display (a bar on a terminal, periodic lines otherwise) and summary table.
#pragma once
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "gauntlet/cases/gate.h"

namespace gauntlet {

class AuditProgress {
 public:
  // kernels: to verify in this run; gates: gate runs those kernels still need (stored ones left out).
  AuditProgress(int kernels, int gates, bool terminal, int line_seconds, std::FILE* out);
  ~AuditProgress();  // stops the ticker and ends the bar's line
  void gate_done(const GateVerdict& v);
  void kernel_done(const std::string& verdict);
  void stop();

 private:
  std::string line();
  void draw(bool final);
  void tick();

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;
  const int kernels_total_, gates_total_;
  // kernels_unsafe_: right inside their contracts, wrong outside; not among kernels_failing_.
  int kernels_done_ = 0, kernels_failing_ = 0, kernels_unsafe_ = 0, gates_done_ = 0, gates_failing_ = 0;
  const bool terminal_;
  const int line_seconds_;
  std::FILE* out_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::thread ticker_;
};

struct AuditSummaryInfo {
  std::string db_path, shard;
  uint64_t seed = 0;
  int already_complete = 0;  // kernels stored by an earlier run, not verified again
  int checks_only = 0;       // of those, kernels whose standard check alone ran in this run
  int harness_errors_retried = 0;  // gates an earlier run stored as harness-error, run again
  int duplicates = 0;        // entries with the same kernel and contract as an earlier entry
  int cuda_skipped = 0;      // CUDA kernels left for a machine with a GPU (not stored)
  std::string cuda_skip_reason;
  int dtype_skipped = 0;     // kernels whose op needs a dtype this LibTorch lacks (not stored)
  std::string dtype_skip_reason;  // the first of them (why_not_runnable_here)
  double seconds = 0;
  int kernels_verified = 0;       // in this run
  // The audit's own bookkeeping: discovery and planning, the lanes' database writes and records,
  // reading the database back for the summary and --json.
  std::array<double, 3> overhead_seconds{};
  int gates_taken = 0;  // run by a CPU lane that had run out of kernels, for another (work stealing)
};

// The summary table: kernels and verdicts, per-gate failure counts (and how many of them failed
// only outside the kernel's contract), failure categories, and the kernels that did not pass.
// `records` is the --json array (read_kernel_reports' records).
void print_audit_summary(const nlohmann::json& records, const AuditSummaryInfo& info, std::FILE* out);

}  // namespace gauntlet
