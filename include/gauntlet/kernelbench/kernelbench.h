// KernelBench modules: the level-1 problem -> op schema mapping (kernelbench/level1.json), problem
// names in KernelBench's file naming, and discovery of modules (a .py, a folder, a run folder, JSONL).
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gauntlet/schema/manifest.h"
#include "gauntlet/common/types.h"

namespace gauntlet::kernelbench {

// One problem whose reference forward is exactly one op schema.
struct ProblemMapping {
  int id = 0;
  std::string name;                        // "23_Softmax"
  std::string op;                          // schema name
  AttrMap attrs;                           // attribute values the reference fixes
  std::vector<std::string> inputs;         // schema input names, in get_inputs() order
  std::vector<int> input_ranks;            // ranks of the get_inputs() tensors
  std::map<std::string, DimLimit> shapes;  // narrower dim limits (optional)
  std::vector<std::vector<std::string>> equal_dims;  // dims get_inputs() makes equal (square: M, K, N)
  std::vector<DType> dtypes;               // dtypes the problem implies (empty: float32)
  std::string notes;
};

// A problem that looks close to a schema but is not mapped, and why.
struct NearMiss {
  int id = 0;
  std::string name, closest_op, reason;
};

struct ProblemMap {
  int level = 0;
  std::vector<ProblemMapping> problems;
  std::vector<NearMiss> near_misses;
  std::string path;
  // The mapping for a problem name or file name in any KernelBench style ("23_Softmax",
  // "23_Softmax.py", "level1/23_Softmax.py", "level_1_problem_23_sample_0_kernel.py"); nullptr when
  // the problem is not mapped, is of another level, or its name part differs from the mapped name.
  const ProblemMapping* lookup(const std::string& name_or_path) const;
};

// Loads a mapping file; on failure nullopt and a one-line *error naming the file and the field.
std::optional<ProblemMap> load_problem_map(const std::string& path, std::string* error);
// <source dir>/kernelbench/level1.json, or $GAUNTLET_KERNELBENCH_MAP when set.
std::string default_problem_map_path();

// What a KernelBench name says: level (0 if unknown), problem id, sample (-1 if none), and the
// problem's name part ("Softmax" for "23_Softmax"; empty for run-layout names).
struct ProblemRef {
  int level = 0;
  int id = 0;
  int sample = -1;
  std::string title;
};
// Parses the last path component (extension dropped); a parent folder "level1"/"level_1" gives the
// level when the name itself does not. nullopt when the name is in none of the styles.
std::optional<ProblemRef> parse_problem_name(const std::string& name_or_path);

// One module found by discover(). error non-empty: the entry cannot be verified (unreadable, not a
// module, malformed JSONL line); recorded, not fatal.
struct ModuleEntry {
  std::string source;     // the candidate module (for a bad JSONL line: "file.jsonl:LINE")
  std::string reference;  // the reference module, empty when unknown
  std::optional<ProblemRef> problem;
  std::optional<ProblemMapping> mapping;  // set when the problem maps to a schema
  std::string device = "cpu";             // "cuda" when the source uses CUDA or Triton
  std::string error;
  // A JSONL line's own words: its number (1-based; 0 for other inputs), its "name" (or
  // "problem_name") as written, and every other field but the sources ("model", "tag", ...).
  int line = 0;
  std::string name;
  nlohmann::json fields = nlohmann::json::object();
};

struct DiscoverOptions {
  std::string work_dir;        // where JSONL pairs are written (required for JSONL input)
  std::string reference_root;  // optional: a KernelBench tree holding level<L>/<id>_<name>.py,
                               // used to fill in the references of run-layout modules
};

// Accepts a .py file, a .jsonl file ({"ref": ..., "candidate": ...} per line, optional "name" or
// "problem_name", "level", "problem_id"), or a folder (searched recursively for .py files, which
// covers KernelBench run folders). Entries are sorted by path (JSONL: by line). On a path that is
// none of these, or a JSONL input without a usable work_dir, returns {} with *error set.
std::vector<ModuleEntry> discover(const std::string& path, const ProblemMap& map,
                                  const DiscoverOptions& options, std::string* error);

// True when the text defines `class ModelNew` at the start of a line.
bool defines_model_new(const std::string& source_text);
// Whether a module's bytes are text Python can read: UTF-8, no NUL. A binary file given as a
// module is bad input, named as such, not a Python traceback fragment.
bool is_python_text(const std::string& bytes);
// "cuda" when the text uses CUDA (a word starting with "cuda": cuda_sources, torch.cuda, .cuda(),
// device="cuda") or Triton; "cpu" otherwise.
std::string module_device(const std::string& source_text);

// The manifest that verifies a mapped entry: op, source, entry "ModelNew", attrs, shapes, dtypes
// (the mapping's, else float32), device. nullopt with *error for an entry with an error or no mapping.
std::optional<KernelManifest> manifest_for(const ModuleEntry& entry, std::string* error);

// The manifest of any usable entry: manifest_for's when mapped, else op "module" (the module's own
// reference Model as the oracle; the entry's reference module, when discovery found one, supplies
// Model, get_inputs() and get_init_inputs()). nullopt with *error for an entry with an error.
std::optional<KernelManifest> module_manifest_for(const ModuleEntry& entry, std::string* error);

// What `gauntlet verify FILE.py` verifies when no op is given: the mapped schema's manifest when
// the file's name is a mapped KernelBench problem (manifest_for), else op "module" (the module's
// own reference Model in float64 as the oracle, module_oracle.h), entry ModelNew, the device the
// text implies. nullopt with *error when the map cannot be read or the file is not a module.
std::optional<KernelManifest> manifest_for_module_file(const std::string& path, std::string* error);

}  // namespace gauntlet::kernelbench
