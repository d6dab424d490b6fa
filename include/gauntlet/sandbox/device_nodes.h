// GPU device nodes: whether this machine has a CUDA device, and hiding the nodes from a sandboxed
// child that does not need the GPU (SPEC Sandbox).
#pragma once
#include <string>

namespace gauntlet {

// Is `name` (an entry of /dev) a GPU node: nvidia* (nvidia0.., nvidiactl, nvidia-uvm,
// nvidia-modeset, the nvidia-caps directories), dri (DRM render nodes) or kfd (AMD)?
bool is_gpu_device_name(const std::string& name);

// Whether a CUDA kernel can run here, asked without initializing CUDA (the parent never does): the
// NVIDIA driver's control node exists. GAUNTLET_NO_CUDA=1 says no regardless. *why says why not.
bool cuda_device_present(std::string* why);

// Inside a private mount namespace (the caller's mounts must not propagate back): covers every
// GPU entry of `dev_dir` (normally "/dev"): a device node or file gets /dev/null bind-mounted
// over it, a directory an empty read-only tmpfs. Symlinks are left alone (their targets are
// entries of their own). Returns how many entries were covered; *error names the first failure
// (the rest are still tried). Uses only mount(2): call it before the seccomp filter.
int hide_gpu_device_nodes(const std::string& dev_dir, std::string* error);

}  // namespace gauntlet
