// Encoding of the sandbox policy handed from the parent to a worker child.
#include "gauntlet/sandbox/sandbox_policy.h"

#include <sched.h>

#include "gauntlet/common/wire.h"

namespace gauntlet {

std::string namespaces_to_string(uint32_t bits) {
  std::string s;
  auto add = [&](uint32_t b, const char* n) {
    if (bits & b) s += (s.empty() ? "" : ",") + std::string(n);
  };
  add(kNsUser, "user");
  add(kNsNet, "net");
  add(kNsMount, "mount");
  add(kNsPid, "pid");
  add(kNsIpc, "ipc");
  return s.empty() ? "none" : s;
}

int clone_flags_for(uint32_t bits) {
  int f = 0;
  if (bits & kNsUser) f |= CLONE_NEWUSER;
  if (bits & kNsNet) f |= CLONE_NEWNET;
  if (bits & kNsMount) f |= CLONE_NEWNS;
  if (bits & kNsPid) f |= CLONE_NEWPID;
  if (bits & kNsIpc) f |= CLONE_NEWIPC;
  return f;
}

std::string encode_policy(const SandboxPolicy& p) {
  wire::Writer w;
  w.i64(p.memory_limit_bytes);
  w.i64(p.cpu_seconds);
  w.i64(p.file_size_bytes);
  w.u32(p.namespaces);
  w.u8(p.seccomp);
  w.u8(p.drop_privileges);
  w.u8(p.private_tmp);
  if (p.tool_ipc) w.u8(1);  // optional trailing byte
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : w.bytes()) {
    out += hex[c >> 4];
    out += hex[c & 15];
  }
  return out;
}

bool decode_policy(const std::string& text, SandboxPolicy* p) {
  if (text.size() % 2) return false;
  std::string bytes;
  for (size_t i = 0; i < text.size(); i += 2) {
    auto nib = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      return -1;
    };
    int hi = nib(text[i]), lo = nib(text[i + 1]);
    if (hi < 0 || lo < 0) return false;
    bytes += char(hi * 16 + lo);
  }
  wire::Reader r(bytes);
  uint8_t sc = 1, dp = 1, pt = 1;
  r.i64(&p->memory_limit_bytes);
  r.i64(&p->cpu_seconds);
  r.i64(&p->file_size_bytes);
  r.u32(&p->namespaces);
  r.u8(&sc);
  r.u8(&dp);
  r.u8(&pt);
  p->seccomp = sc;
  p->drop_privileges = dp;
  p->private_tmp = pt;
  uint8_t ipc = 0;
  if (r.ok() && !r.at_end()) r.u8(&ipc);
  p->tool_ipc = ipc != 0;
  return r.ok() && r.at_end();
}

}  // namespace gauntlet
