// `gauntlet replay FILE --emit DIR`: a failure as a standalone reproducer that needs no gauntlet:
// the case's exact input bytes (views included), the float64 reference and the allowed error per
// element, the kernel's source and a PyTorch script that loads it, runs the case and prints the
// first mismatch with its diagnosis. What a kernel's author, or the model that wrote it, gets back.
#pragma once
#include <ATen/ATen.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gauntlet/cases/case.h"
#include "gauntlet/schema/manifest.h"
#include "gauntlet/oracle/oracle.h"
#include "gauntlet/schema/schema.h"

namespace gauntlet::replay_emit {

struct EmitInput {
  const OpSchema& schema;
  const KernelManifest& manifest;  // source (and a module's reference) readable now
  const Case& c;
  const std::vector<at::Tensor>& inputs;  // materialized, in their layouts
  const OracleResult& oracle;
  std::string gate;
  nlohmann::json recorded;  // the replay file's verdict (status, category, message, diagnosis)
};

// Writes DIR/repro.py, DIR/case.json, DIR/data/*.bin and DIR/kernel/ (the kernel's source, a
// module's reference). false and *error (one line) when DIR cannot be written or the kernel's form
// has no standalone loader (a CUDA source without a PYBIND11_MODULE block).
bool emit(const std::string& dir, const EmitInput& in, std::string* error);

// The script itself (also what tests run).
const char* repro_script();

}  // namespace gauntlet::replay_emit
