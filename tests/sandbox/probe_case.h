// Test helper: one sandboxed child of `options` loads a probe kernel's "forward" and runs one case
// (a float tensor of four ones); the probe reports what it saw in its error message.
#pragma once
#include <ATen/ATen.h>

#include <string>

#include "gauntlet/sandbox/sandbox.h"

namespace gauntlet {

// The case's message (the probe's report), or why the child did not get that far; *notes, when
// given, the child's sandbox notes.
inline std::string run_probe_case(const SandboxOptions& options, const std::string& so_path, std::string* notes = nullptr) {
  Launcher launcher(options);
  std::string error;
  auto s = launcher.spawn(&error);
  if (!s) return "spawn failed: " + error;
  Outcome lo = s->load(so_path, "forward");
  if (lo.kind != Outcome::Kind::Ok) return "load failed: " + lo.message;
  wire::CaseRequest c;
  c.case_id = 1;
  wire::Arg a;
  a.kind = wire::Arg::Kind::Tensor;
  a.tensor = at::ones({4});
  c.args.push_back(a);
  Outcome out = s->call(c);
  if (notes) *notes = s->sandbox_notes();
  return out.message;
}

}  // namespace gauntlet
