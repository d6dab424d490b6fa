// Internal interface of the sandboxed worker: entering the sandbox, serving cases, the zygote.
#pragma once
#include <string>

#include "gauntlet/sandbox/sandbox_policy.h"

namespace gauntlet::worker {

// File descriptors every worker child uses (set up by its creator).
constexpr int kRequestFd = 3;   // frames from the parent
constexpr int kReplyFd = 4;     // frames to the parent
constexpr int kControlFd = 3;   // the zygote's control socket

// Applied in the child before the kernel is loaded: mounts (private /tmp), the kernel copied into
// it, privileges dropped, rlimits, no-new-privs and the seccomp filter. `so_path` is updated to
// the path the kernel can be loaded from afterwards. Returns false with *error on failure;
// `notes` says which layers are active.
// With `cuda` (the kernel's device is cuda) and pid + mount namespaces, a procfs of the child's own
// pid namespace is mounted on /proc first: the CUDA driver fails to start (error 304, "OS call
// failed") in a pid namespace whose /proc is the host's.
bool enter_sandbox(const SandboxPolicy& policy, std::string* so_path, std::string* notes,
                   std::string* error, bool cuda = false);

// For pid 1: self-sent fatal signals are reported as a Signal frame, then the process exits.
void install_signal_reporters();

// device=cuda: the GPU this child sees, as a JSON object for LoadReply.device_info (name, compute
// capability, memory, driver, CUDA_VISIBLE_DEVICES). Initializes CUDA in the calling process.
std::string describe_cuda_device();

// Serves Load, then Case frames until Bye or EOF. Returns the process exit code.
int serve(const SandboxPolicy& policy);

// Child side of a spawn: the worker (as pid 1 of its pid namespace when there is one).
int run_child(SandboxPolicy policy);
// Puts the sandbox fds at 3 (requests), 4 (replies), 1 and 2 (capture), 5 (status, or -1) and closes the rest.
void arrange_fds(int req, int rep, int capture, int status);

// The zygote loop on kControlFd: forks sandboxed children on request. Returns the exit code.
int zygote_main();

}  // namespace gauntlet::worker
