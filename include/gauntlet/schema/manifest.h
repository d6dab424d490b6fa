// Kernel manifests (kernel.json) and their command-line equivalent: a source tied to its contract.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gauntlet/common/types.h"

namespace gauntlet {

struct DimLimit {
  std::optional<int64_t> min, max;
};

struct KernelManifest {
  std::string op;
  std::string source;              // resolved path (relative to the manifest's folder)
  std::string entry = "forward";
  std::string backward_entry;      // optional (gradients gate)
  std::string device = "cpu";
  std::vector<DType> dtypes;       // empty: the schema's whole domain
  AttrMap attrs;                   // fixed attribute values the kernel supports
  std::map<std::string, DimLimit> shapes;  // narrower dim limits
  // The rest of the contract (docs/schema-format.md, "A kernel's contract"); empty: the schema's.
  std::map<std::string, std::vector<int64_t>> ranks;  // input -> the ranks the kernel accepts
  std::vector<std::string> layouts;                   // the input layouts it accepts ("contiguous", ...)
  std::vector<std::vector<std::string>> equal_dims;   // groups of dims that are equal (square: M, K, N)
  // input -> the structure its values have over the last two dims (schema.h is_structure_name):
  // every case projects that input onto it, in and out of the contract. A KernelBench problem's
  // binding sets it from get_inputs() (a triangular or symmetric matrix problem).
  std::map<std::string, std::string> structures;
  // A module's problem contract ("shapes": "get_inputs", and every module found as a KernelBench
  // problem, kernelbench.h manifest_for): verify binds the contract's dims and dtype to get_inputs()'
  // own (problem_contract.h) before the gates run. problem_inputs: the schema input each
  // get_inputs() tensor is, in order (the problem map's; empty: the schema's inputs in order).
  bool shapes_from_get_inputs = false;
  std::vector<std::string> problem_inputs;
  std::string manifest_path;       // empty when built from flags
  // Fields a command-line flag gave or replaced ("op", "dtypes", "attrs", "attrs/dim"), so that a
  // message about one names the flag rather than the file (contract_check.h).
  std::vector<std::string> flag_fields;
  // Python modules only: the module supplying Model, get_inputs() and get_init_inputs() when the
  // source lacks them (a KernelBench run's sample, a JSONL pair's candidate): resolved path or "".
  std::string reference;
  // Python modules only, set by the build step (module_build.h), never read from a manifest: the
  // module's build directory, whose extensions its children load instead of compiling.
  std::string module_build_dir;
  // Unmapped Python modules only, set from the reference's description (module_oracle.h), never
  // read from a manifest: get_inputs()' non-tensor values, which every child passes at their places.
  std::string module_constants;
  nlohmann::json expect;           // the corpus' self-test record (optional)
};

// The memory layouts gauntlet hands kernels (TensorRecipe::layout), as a manifest's and a schema's
// "layouts" name them.
inline constexpr const char* kLayoutNames = "contiguous, transposed, strided, offset, expanded, channels_last";
bool is_layout_name(const std::string& name);

// A KernelBench-style Python module (source ending in ".py", docs/modules.md): not built; run by the
// Python worker (python/gauntlet_pyworker.py), entry = the class name (default "ModelNew").
bool is_python_module(const KernelManifest& m);
// Fills in the contract a kernel form implies where its manifest is silent: a KernelBench-style
// Python module's is its problem's (SPEC "Kernel forms"): contiguous inputs and, given the schema
// it is mapped to, no empty dim (get_inputs() never builds one). verify and replay both apply it,
// so a replayed case is judged under the contract it was run under.
struct OpSchema;
void apply_contract_defaults(KernelManifest* m, const OpSchema* schema = nullptr);
// Whether `name` can name an entry: identifiers joined by "::" or "." (a C++ function, perhaps in a
// namespace; a Python class). kEntryNameRule says so in a message.
bool is_entry_name(const std::string& name);
inline constexpr const char* kEntryNameRule = "is not an entry name (identifiers: letters, digits and _, joined by :: or .)";
// The entry as the Python worker's Load carries it: the class name, then "|" and the reference
// module's path when the manifest names one (the worker reads both files before its sandbox).
std::string python_load_entry(const KernelManifest& m, const std::string& entry);

// The manifest's dtypes (a JSON array of names) and shape limits (an object of {"min", "max"},
// null where open), as replay files embed them and the results database hashes them.
nlohmann::json manifest_dtypes_json(const KernelManifest& m);
nlohmann::json manifest_shapes_json(const KernelManifest& m);

// Loads a manifest. On failure returns nullopt with a one-line *error naming the file and field.
std::optional<KernelManifest> load_manifest(const std::string& path, std::string* error);
// Parses "k=v" attribute flags: v as bool (true/false), int, or double.
bool parse_attr_flag(const std::string& kv, std::string* key, AttrValue* value, std::string* error);

}  // namespace gauntlet
