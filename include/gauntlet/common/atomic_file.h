// Files written whole or not at all: beside the target, then renamed over it.
#pragma once

#include <string>

namespace gauntlet {

// Writes `bytes` to a temporary file beside `path` and renames it over `path`: a reader (or an
// interrupted run) sees the old file or the new one, never half of one. false when any step fails,
// and then nothing is left behind: no temporary file, `path` untouched.
bool write_file_atomic(const std::string& path, const std::string& bytes);

}  // namespace gauntlet
