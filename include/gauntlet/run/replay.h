// gauntlet replay: re-runs one stored failing case and reproduces its verdict and output bytes.
#pragma once
#include <cstdio>
#include <string>

#include "gauntlet/sandbox/sandbox.h"

namespace gauntlet {

struct ReplayOptions {
  std::string file;
  std::string dump_dir;  // non-empty: write inputs, expected and actual values here
  std::string emit_dir;  // non-empty: write a standalone PyTorch reproducer here (replay_emit.h)
};

// The kernel, its local includes, a module's reference and the manifest come from the recorded
// paths when they hold the recorded bytes, else from the copies the file embeds (docs/audit.md).
// Exit code: 0 the gate passes now, 1 it fails or errors (the failure reproduces), 2 a bad,
// corrupt or mismatched replay file (other tool version, schema changed, a changed or missing
// kernel with no embedded copy) or harness error.
int run_replay(const ReplayOptions& options, Launcher& launcher, std::FILE* out);

}  // namespace gauntlet
