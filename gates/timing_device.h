// The timing gate's view of the device: its measured peaks and the kernel binary's resources.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "gauntlet/cases/gate.h"
#include "gauntlet/common/timing.h"

namespace gauntlet::timing_gate {

// The device's peaks from the build cache directory, else measured by `session`'s child and
// cached; copy_bytes_per_s stays 0 when neither has them.
wire::DevicePeaks device_peaks(WorkerSession& session, bool cuda, const std::string& device_name);

std::string cpu_model();

double matmul_peak(const wire::DevicePeaks& p, DType d);

// Registers, shared memory and local memory (spills) of each CUDA function, from cuobjdump.
nlohmann::json cubin_resources(const std::string& so_path);

}  // namespace gauntlet::timing_gate
