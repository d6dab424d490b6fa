// What the sandbox imposes on a worker child; shared by the parent (which chooses) and the worker (which applies).
#pragma once
#include <cstdint>
#include <string>

namespace gauntlet {

// Namespace bits, as requested and as achieved (recorded in the JSON environment).
enum NamespaceBits : uint32_t {
  kNsUser = 1u << 0,
  kNsNet = 1u << 1,
  kNsMount = 1u << 2,
  kNsPid = 1u << 3,
  kNsIpc = 1u << 4,
};
std::string namespaces_to_string(uint32_t bits);  // "net,mount,pid,ipc" or "none"
// clone(2) flags for the bits.
int clone_flags_for(uint32_t bits);

struct SandboxPolicy {
  int64_t memory_limit_bytes = int64_t(4) << 30;  // RLIMIT_DATA: heap and anonymous mappings
  int64_t cpu_seconds = 0;          // RLIMIT_CPU backstop (0: none); the wall clock is the parent's
  int64_t file_size_bytes = int64_t(64) << 20;  // RLIMIT_FSIZE: bounds what a kernel can write
  uint32_t namespaces = 0;          // achieved namespaces (set by whoever created the child)
  bool seccomp = true;              // deny sockets, ptrace, exec, new processes, namespace changes
  bool drop_privileges = true;      // root outside a user namespace becomes nobody (65534)
  bool private_tmp = true;          // a fresh tmpfs on /tmp when a mount namespace exists
  // The compute-sanitizer child (SandboxOptions::tool_ipc): Unix sockets allowed by the seccomp
  // filter. Encoded only when set, so other policies' text is unchanged.
  bool tool_ipc = false;
};

std::string encode_policy(const SandboxPolicy& p);  // hex text, safe on a command line
bool decode_policy(const std::string& text, SandboxPolicy* p);

}  // namespace gauntlet
