// The worker side of the timing gate: timed calls of the candidate and the library baseline, device peaks.
#pragma once
#include "gauntlet/kernel_abi.h"
#include "gauntlet/common/timing.h"

namespace gauntlet::worker {

// Runs a TimeRequest (see include/gauntlet/common/timing.h). `cuda`: inputs go to the GPU and CUDA
// events time the calls; otherwise the steady clock does. Never throws.
wire::TimeReply run_timing(const KernelEntry& entry, const wire::TimeRequest& request, bool cuda);

// Measures the device's copy rate and matmul rates (a second or two). Never throws; zero rates
// for what could not be measured, with the reason in `how`.
wire::DevicePeaks measure_peaks(bool cuda);

}  // namespace gauntlet::worker
