// The memory gate's compute-sanitizer sub-check (CUDA kernels): memcheck and initcheck over every case.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gauntlet/cases/gate.h"
#include "gauntlet/sandbox/file_lock.h"

namespace gauntlet::memory_gate {

// Tested by tests/gates/memory_sanitizer_test.cpp, which declares SanitizerReport,
// parse_sanitizer_report and sanitizer_command again.

// The first error of a compute-sanitizer report (memcheck or initcheck), as one line.
struct SanitizerReport {
  bool found = false;       // an error the tool reported
  std::string kind;         // e.g. "Invalid __global__ write of size 4 bytes"
  std::string kernel;       // the device function, e.g. "relu_kernel" ("" for host API errors)
  std::string thread, block;  // e.g. "(0,0,0)"
  std::string where;        // e.g. "0 bytes after the end of a 4096-byte allocation"
  std::string message;      // "<tool>: kind in kernel (thread .. block ..), where"
  size_t offset = std::string::npos;  // where the error starts in the text
  int64_t errors = -1;      // the ERROR SUMMARY count; -1: no summary (the tool did not finish)
  std::string tool_error;   // the tool's own failure ("Error: ..." lines), not the kernel's
};

// Works on the raw text and on read_capture_tail's (newlines as spaces): every line of a report
// starts with "=========", so the text is cut there.
SanitizerReport parse_sanitizer_report(const std::string& tool, const std::string& text);

// compute-sanitizer: $GAUNTLET_COMPUTE_SANITIZER (a path; "none" turns the check off), else on PATH,
// else under /usr/local/cuda. "" when absent.
std::string find_compute_sanitizer();

// The sanitizer's command line in front of the worker's. Reports go to its stdout (captured with
// the worker's); --error-exitcode only marks the exit, the report is parsed.
std::vector<std::string> sanitizer_command(const std::string& path, const std::string& tool, int timeout_s);

// Children that share the host's network namespace (no private one: GAUNTLET_NAMESPACES without
// "net", or a host that refuses it) run their compute-sanitizer one at a time, host-wide: four at
// once stalled in memcheck for 60 s and printed no summary (docs/gpu.md, thirtieth session), while
// children with their own network namespace never did. The front-end and its target meet through
// Unix sockets, and abstract ones belong to a network namespace; concurrent sandboxes give their
// processes the same pids, so their names can meet. Holds `lock_path` exclusively when
// `shares_host_network` (returned held), else returns an unheld lock at once; *waited_seconds gets
// the wait. GAUNTLET_SANITIZER_SHARED_NETWORK=concurrent turns the rule off (for measurements).
std::unique_ptr<FileLock> sanitizer_turn(bool shares_host_network, const std::string& lock_path, double* waited_seconds);
inline const char* kSanitizerSharedNetworkLock = "/tmp/gauntlet-sanitizer-shared-network.lock";

// device=cuda, after both poisoned children: memcheck, then initcheck, each in one fork+exec'd
// child that compute-sanitizer starts, over every case; then the verdict, which says exactly what
// was checked on the device.
GateVerdict check_cuda_sanitizers(GateContext& ctx, const std::vector<Case>& cases,
                                  const std::vector<std::vector<at::Tensor>>& inputs);

}  // namespace gauntlet::memory_gate
