// The memory gate's AddressSanitizer sub-check (CPU kernels): an ASan build of the kernel run on every case.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "gauntlet/cases/gate.h"

namespace gauntlet::memory_gate {

// Tested by tests/gates/memory_test.cpp, which declares AsanReport, parse_asan_report and
// asan_runtime again.

// The kind line of an AddressSanitizer report ("heap-buffer-overflow", "READ of size 4", where).
struct AsanReport {
  bool found = false;
  std::string kind;    // e.g. heap-buffer-overflow
  std::string access;  // e.g. READ of size 4 (empty for reports without one, e.g. SEGV)
  std::string where;   // e.g. 0 bytes after 4000-byte region
};

AsanReport parse_asan_report(const std::string& text);

// The compiler's ASan runtime ("" when it has none: `-print-file-name` echoes the bare name back).
std::string asan_runtime(const std::string& cxx);

// The ASan sub-check's child: a separately built .so, run fork+exec'd with the runtime preloaded.
struct AsanChild {
  std::string skipped;  // why the sub-check did not run ("" when it runs)
  std::string so_path;
  std::unique_ptr<Launcher> launcher;
  std::unique_ptr<WorkerSession> session;
  int cases = 0;
};

// Builds the ASan variant and starts its child; `skipped` says why when it cannot.
void open_asan(GateContext& ctx, AsanChild& out);

// Runs case `c` (on the plain children's `inputs`) in the ASan child: a report fails it.
GateVerdict check_asan(GateContext& ctx, AsanChild& asan, const Case& c, const std::vector<at::Tensor>& inputs);

}  // namespace gauntlet::memory_gate
