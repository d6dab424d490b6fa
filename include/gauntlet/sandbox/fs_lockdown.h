// Locking a sandboxed child's filesystem: every mount read-only, a fresh tmpfs over each world-writable place.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace gauntlet {

// The world-writable places of a usual Linux host. A gate child gets a fresh, empty tmpfs over each
// that exists (/tmp is the private /tmp the child already had), so nothing it writes outlives it
// and nothing another child wrote is there (SPEC Sandbox; docs/modules.md, "Filesystem").
const std::vector<std::string>& world_writable_dirs();  // /tmp, /var/tmp, /dev/shm, /run/lock

// One line of /proc/self/mountinfo: its mount point (octal escapes decoded) and the per-mount
// flags (MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC and the atime flags) of its options field.
struct MountPoint {
  std::string path;
  unsigned long flags = 0;
};
std::vector<MountPoint> parse_mountinfo(const std::string& text);

// Inside the caller's own mount namespace, already made private (MS_REC | MS_PRIVATE on "/"):
// 1. bind-remounts every visible mount read-only, keeping its other per-mount flags (a user
//    namespace must keep them, and nosuid/nodev/noexec must not be lost), except /proc and what
//    is under it (no file stored there outlives the child), the `cover` places and `keep`;
// 2. mounts a fresh tmpfs (nosuid, nodev, mode 1777) on each directory of `cover` that exists.
// Device nodes stay usable on a read-only mount (/dev/null, /dev/urandom, the GPU's nodes).
// Returns the sandbox note ("fs-readonly private-var-tmp ..."); a mount that fails is named in
// it ("fs-readonly=partial(/x: Permission denied)") and the rest is still done. Uses only
// mount(2): call it before the seccomp filter.
std::string lock_down_filesystem(const std::vector<std::string>& cover, const std::vector<std::string>& keep);

}  // namespace gauntlet
