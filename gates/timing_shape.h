// The timing gate's timed shape: how far it grows on each device, and what the schema says it costs.
#pragma once
#include <cstdint>
#include <string>

#include "gauntlet/cases/case.h"
#include "gauntlet/schema/schema.h"

namespace gauntlet::timing_gate {

// How big the timed shape grows, per device. CPU: a few MB so a gate stays around a second on a
// 2-core machine; GPU: well past the L2 (50 MB on an H200) so the bytes term is DRAM traffic and
// a kernel that skips its work falls far below the floor, yet an fp64 oracle of each input set
// stays under a second on the host.
struct Targets {
  double bytes, flops;
  int sets;
  uint32_t max_iterations;
  double budget_seconds;   // per dtype, timed loop only
  uint64_t flush_bytes;    // GPU: scratch written before every timed call (as triton's do_bench)
};
Targets targets_for(const std::string& device);

struct Cost {
  double flops = 0, bytes = 0;
  bool ok = false;
};

Cost cost_of(const OpSchema& schema, const Case& c);

// The timed shape: each dim starts at its largest typical size and is doubled in turn while the
// case stays inside the contract and under the device's byte and flop targets.
bool timing_case(const CaseSpace& space, DType dtype, const Targets& t, uint64_t seed, Case* out, std::string* error);

}  // namespace gauntlet::timing_gate
