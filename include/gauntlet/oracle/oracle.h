// fp64 CPU reference implementations ("oracles") of every op schema, in plain obviously-correct code.
#pragma once
#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "gauntlet/common/types.h"

namespace gauntlet {

// What an oracle returns. `outputs` are float64 for floating results (int64 for index
// results), computed entirely in float64 from the kernel's exact inputs.
// `scales[i]` (same shape as outputs[i], float64, may be undefined for elementwise ops)
// is the per-element magnitude that the reduction tolerance multiplies:
//   allowed_err = c * u_acc * sqrt(K) * scale   (see docs/tolerances.md)
// For a plain sum it is sum|terms|; each oracle documents its own choice.
struct OracleResult {
  std::vector<at::Tensor> outputs;
  std::vector<at::Tensor> scales;
  std::string error;  // non-empty: the oracle refused these inputs (e.g. index out of range)
  bool ok() const { return error.empty(); }
};

// Runs oracle `oracle_id` (the schema's "oracle" field). `inputs` are in the schema's order and
// may be of any dtype: each oracle casts floating tensors to float64 (and index tensors to int64)
// before any ATen call. Never throws: failures come back in `error`.
OracleResult run_oracle(const std::string& oracle_id, const std::vector<at::Tensor>& inputs,
                        const AttrMap& attrs);

// Calls whose inputs hold at least this many elements in all take turns with each other inside
// run_oracle (in small thread teams, heavy_oracle_threads): at a problem's own sizes they are seconds of float64 work.
constexpr int64_t kHeavyOracleElements = int64_t(1) << 20;
bool is_heavy_oracle_call(const std::vector<at::Tensor>& inputs);
// How many heavy calls may run at once (the cores over heavy_oracle_threads), and the most that ever have.
int heavy_oracle_permits();
int heavy_oracle_peak();
// The threads each heavy call runs with (GAUNTLET_ORACLE_CALL_THREADS, else 2, or 1 where ATen
// runs one); the permits are the cores over them.
int heavy_oracle_threads();
void set_heavy_oracle_threads(int threads);

// Every oracle id a schema may name, sorted. run_oracle also runs the oracles of the pending table
// (src/oracle/oracle.cpp), ops with no schema yet; issue 20 has left it empty.
std::vector<std::string> oracle_ids();

}  // namespace gauntlet
