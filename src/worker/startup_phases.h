// device=cuda: where a child's start went (exec and libraries, sandbox, kernel load, CUDA), for reports.
#pragma once
#include <cstdint>
#include <string>

namespace gauntlet::worker {

struct StartupPhases {
  double before_serve = -1;  // from the process's start to serve(): exec, the dynamic loader, LibTorch's statics
  double sandbox = 0;        // entering the sandbox (namespaces, filesystem, seccomp)
  double dlopen = 0;         // loading the kernel's shared object and what it links (torch_cuda, cudart)
  double cuda_init = 0;      // the CUDA runtime's start and the device's description (cuInit, queries)
  double context = 0;        // the context's creation, a first copy, the first poisoning (warm_up_cuda)
  double load_wait = 0;      // from serve() until the parent's Load frame was read (the parent's send)
  double preload = 0;        // the kernel's own CUDA functions loaded (kernel_preload.h)
  int preload_symbols = 0, preload_kernels = 0;
  // CLOCK_MONOTONIC (host-wide; children get no time namespace) when the Load frame was read and
  // when the reply was ready: the parent sets its own stamps beside them (child_start_clock.h).
  int64_t load_read_ns = 0, ready_ns = 0;
  // The same clock at the CUDA start's steps, for the timeline (common/trace.h): CUDA's init began,
  // the context's creation began, the first copy was back (the context made), the first poisoning
  // was done. 0 when not reached.
  int64_t init_ns = 0, context_ns = 0, context_made_ns = 0, warm_ns = 0;
};

// Seconds since this process started (/proc/self/stat's start time, in clock ticks); -1 when unknown.
// Call before the sandbox hides /proc.
double seconds_since_process_start();

// `device_json` (a JSON object, describe_cuda_device) with a "startup_seconds" object of the phases
// added; unchanged when it is not an object.
std::string with_startup_phases(const std::string& device_json, const StartupPhases& p);

}  // namespace gauntlet::worker
