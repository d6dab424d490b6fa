// Internal to replay: the sources a replay file carries (kernel, its local #includes, a module's
// reference, the manifest's contract) and their materialization when the recorded paths are gone.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "gauntlet/schema/manifest.h"

namespace gauntlet::replay_sources {

// The replay file's "sources" object: {"kernel": {path, sha256, text|base64}, "includes": [{name
// (relative to the kernel's folder), sha256, text|base64}], "unembedded": [names], "reference":
// {...} (modules naming one), "manifest": {op, entry, backward, device, dtypes, attrs, shapes}}.
// The kernel is left out when its bytes no longer hash to `kernel_hash` (edited during the run).
nlohmann::json embed(const KernelManifest& m, const std::string& kernel_hash);

// The manifest a replay runs, with source and reference paths that hold the recorded bytes now.
// Owns the private folder the embedded copies were written to (removed by the destructor).
class Resolved {
 public:
  Resolved() = default;
  ~Resolved();
  Resolved(const Resolved&) = delete;
  Resolved& operator=(const Resolved&) = delete;

  KernelManifest manifest;
  std::string note;      // one line: which sources were used ("the recorded paths" / "the embedded copies ...")
  std::string temp_dir;  // non-empty when the embedded copies were materialized
};

// From a parsed replay file: the recorded paths when every recorded file is there with the recorded
// sha256, else the embedded copies, written into a private temporary folder. A file written before
// replay files carried sources resolves only through its recorded paths (its manifest is re-read
// from disk). false with a one-line *error when neither the path nor an embedded copy is usable.
bool resolve(const nlohmann::json& replay, Resolved* out, std::string* error);

}  // namespace gauntlet::replay_sources
