// device=cuda: where a child's start went (exec and libraries, sandbox, kernel load, CUDA), for reports.
#pragma once
#include <string>

namespace gauntlet::worker {

struct StartupPhases {
  double before_serve = -1;  // from the process's start to serve(): exec, the dynamic loader, LibTorch's statics
  double sandbox = 0;        // entering the sandbox (namespaces, filesystem, seccomp)
  double dlopen = 0;         // loading the kernel's shared object and what it links (torch_cuda, cudart)
  double cuda_init = 0;      // the CUDA runtime's start and the device's description (cuInit, queries)
  double context = 0;        // the context's creation, a first copy, the first poisoning (warm_up_cuda)
};

// Seconds since this process started (/proc/self/stat's start time, in clock ticks); -1 when unknown.
// Call before the sandbox hides /proc.
double seconds_since_process_start();

// `device_json` (a JSON object, describe_cuda_device) with a "startup_seconds" object of the phases
// added; unchanged when it is not an object.
std::string with_startup_phases(const std::string& device_json, const StartupPhases& p);

}  // namespace gauntlet::worker
