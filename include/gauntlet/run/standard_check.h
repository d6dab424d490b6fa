// The field's standard check beside gauntlet's verdict (issue 16 item 6): KernelBench's own check
// for a Python module, the KernelBench-style kbcheck for a manifest, and the table of the two.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gauntlet/schema/manifest.h"
#include "gauntlet/sandbox/sandbox.h"

namespace gauntlet {

// What the standard check said of one kernel.
struct StandardCheck {
  std::string verdict;  // "accept" | "reject" | "error" (the check itself could not run)
  std::string reason;   // one line
  // "kernelbench": a module's own get_inputs(), ModelNew against Model (KernelBench's eval);
  // "kbcheck": a manifest's kernel on U[0,1) inputs at one shape against the library op.
  std::string check;
  double seconds = 0;
  // Sandboxed children it started (one for its trials, once that child was spawned) and that
  // child's CUDA hardware queues (concurrent_gate_queues; 0: a CPU child or the driver's default):
  // what the check adds to an audited kernel's fresh contexts (tools/gpu/throughput_summary.py).
  int children = 0;
  uint32_t hardware_queues = 0;
};

// Runs the check that the field would have run on this kernel, in sandboxed children of
// `launcher` (docs/audit.md, "The standard check"):
//  - a Python module: KernelBench's eval, once: seed 42, Model and ModelNew from get_init_inputs(),
//    5 trials of get_inputs() (each after its own seed), outputs of equal shapes and
//    torch.allclose(atol=1e-2, rtol=1e-2). Its trials run as one request under --timeout.
//  - a manifest: kb_style_check (verify.h): 5 trials of U[0,1) inputs at one shape, allclose 1e-2.
// Never throws; what goes wrong in gauntlet is an "error" verdict with the reason.
StandardCheck run_standard_check(const KernelManifest& manifest, Launcher& launcher);

// The stored form: {"verdict", "reason", "check", "seconds"}, with "children" and "hardware_queues"
// once a child started; and back (nullopt when `j` is not an object whose verdict is accept,
// reject or error; the two counts 0 when absent, as in databases from before them).
nlohmann::json standard_check_to_json(const StandardCheck& c);
std::optional<StandardCheck> standard_check_from_json(const nlohmann::json& j);

// The 2x2 (3x2 with unsafe) over audit records (read_kernel_reports' format, each with its
// "standard_check"): rows the standard check's accept and reject, columns gauntlet's pass, unsafe
// and fail (fail and error together). As JSON:
//   {"accept": {"pass", "unsafe", "fail"}, "reject": {"pass", "unsafe", "fail"},
//    "compared"      kernels in the table,
//    "check_error"   kernels whose standard check could not run (verdict "error"),
//    "not_run"       complete kernels without a standard check (--no-standard-check, older databases),
//    "flagged"       [{"label", "reason"}] of the kernels the standard check rejects and gauntlet
//                    passes, in record order: each is a gauntlet false negative or a false alarm
//                    of the standard check, and is listed first wherever kernels are listed}
// Incomplete kernels and entries that are not kernels are in no count.
nlohmann::json standard_check_table(const nlohmann::json& records);
// Whether a record is one the table flags (standard check rejects, gauntlet passes).
bool standard_check_flags(const nlohmann::json& record);
// The audit summary's lines for the table: none when no record carries a standard check.
std::vector<std::string> standard_check_lines(const nlohmann::json& table);

}  // namespace gauntlet
