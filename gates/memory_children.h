// The memory gate's poisoned, guarded children: starting and calling them, their findings, their verdicts.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gauntlet/cases/gate.h"

namespace gauntlet::memory_gate {

inline constexpr const char* kGate = "memory";
// Two children poisoned differently: 0xA5 a finite value, the second NaN where it can be, so a
// result that reads memory nobody wrote differs between them.
inline constexpr uint8_t kPoisonA = 0xA5;
inline constexpr uint32_t kGuardBytes = 64;  // per side, per buffer: a multiple of c10's 64-byte alignment

// The second child's poison: 0xFF (NaN in every float dtype) where the worker can fill with any
// byte. The Python worker's CPU heap poison is glibc's M_PERTURB, which fills with value^0xFF and
// is off at value 0, so it cannot give 0xFF; there 0xFE (NaN in half, -1.7e38 in float, bfloat16).
uint8_t poison_b(const KernelManifest& m);

std::string hex(uint8_t b);  // "0xA5"

// A child loaded for this gate: its own poison and guards, from `launcher` (the ASan one for ASan).
std::unique_ptr<WorkerSession> open_child(GateContext& ctx, Launcher& launcher, uint8_t poison, uint32_t guard,
                                          const std::string& so_path, GateVerdict* failed);

// One call of case `c`, its time accounted to the gate.
Outcome timed_call(GateContext& ctx, WorkerSession& s, const Case& c, const std::vector<at::Tensor>& inputs);

// One line per finding kind, naming the buffer and the bytes.
std::string describe(const GateContext& ctx, const wire::MemoryFinding& f);

// Whether two calls' outputs are the same bytes (count, shapes, dtypes, contents).
bool same_bytes(const wire::CallOutputs& a, const wire::CallOutputs& b);

// Elements whose bytes differ between the two poisons; "" when every output agrees.
std::string compare_poisons(const GateContext& ctx, const wire::CallOutputs& a, const wire::CallOutputs& b,
                            nlohmann::json* evidence);

// The verdicts of the gate's cases: a pass, a failure of `run` (with its replay), and an error
// outcome of `run` with `which` child it came from.
GateVerdict passed();
GateVerdict failure(GateContext& ctx, CaseRun& run, Category cat, const std::string& message);
GateVerdict error_from(GateContext& ctx, CaseRun& run, const std::string& which);

}  // namespace gauntlet::memory_gate
