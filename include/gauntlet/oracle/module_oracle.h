// The module oracle: an unmapped KernelBench module's own reference Model, evaluated in float64 in a
// sandboxed Python child, as the oracle of a schema synthesized from its get_inputs().
#pragma once
#include <ATen/ATen.h>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gauntlet/schema/manifest.h"
#include "gauntlet/oracle/oracle.h"
#include "gauntlet/sandbox/sandbox.h"
#include "gauntlet/schema/schema.h"

namespace gauntlet {

// The manifest op that asks for the module oracle ({"op": "module", "source": "m.py"}).
inline constexpr const char* kModuleOp = "module";

// What the reference child found in the module (get_inputs(), Model's outputs and operators).
struct ModuleDescription {
  struct Input {
    DType dtype = DType::Float32;
    std::vector<int64_t> shape;
    std::string kind = "real";  // "real" | "nonnegative" | "index" | "bool"
    int64_t low = 0, high = 1;  // index: the range get_inputs() drew from, [low, high)
    std::string structure;      // floating: "lower-triangular", "upper-triangular", "symmetric", "diagonal" or ""
  };
  struct Output {
    DType dtype = DType::Float32;
    std::vector<int64_t> shape;
  };
  std::vector<Input> inputs;
  std::vector<Output> outputs;
  std::vector<std::string> ops;      // every ATen operator Model.forward called
  std::vector<std::string> key_ops;  // those provenance forbids (python/gauntlet_worker/reference.py key_ops)
  int copied_state = 0;              // state entries copied from ModelNew into Model
  std::string candidate_note;        // why ModelNew's weights could not be copied, if so
  // get_inputs()' non-tensor values (a scale, a dim), fixed by the problem and passed at their
  // positions: a JSON array of {"index", "value"}, "" when get_inputs() returns tensors only.
  std::string constants;
};
// Parses the reference child's LoadReply signature (JSON); nullopt and *error when malformed.
std::optional<ModuleDescription> parse_module_description(const std::string& json, std::string* error);

// The tolerance of the module oracle, "module-envelope" (docs/modules.md). Per output tensor, with
// r the float64 reference, l the framework's own result (Model in the inputs' dtype), u32 the
// float32 unit roundoff and m = mean |r| over the finite elements:
//   rel     = max(kEnvelopeFactor * max_i |l_i - r_i| / (|r_i| + m),  kFloorC * u32 * sqrt(K))
//   allowed = rel * (|r_i| + m) + kEnvelopeUlps * ulp(r_i)
// K (the reduction-length estimate) is the largest per-sample size of any input (the product of
// its dims after the first): no reduction in one output element can take more terms than that.
// Elements where the framework itself is non-finite while r is finite, or off by more than
// kAmbiguousFactor times the floor (an intermediate overflowed or underflowed in the dtype), are
// not judged: Model defines the semantics, and there the dtype's Model has none.
inline constexpr double kEnvelopeFactor = 16;
inline constexpr double kFloorC = 2;
inline constexpr double kEnvelopeUlps = 4;
inline constexpr double kAmbiguousFactor = 1024;

// The reference child's two results for one case, turned into an oracle result: outputs = the
// float64 reference, scales = the envelope above expressed for the schema's tolerance
// (mode reduction, c = 1, accumulator = the dtype, K = 1: allowed = ulps*ulp + u_dtype*scale), +inf
// where an element is not judged. `lib` may be empty (the dtype's Model failed: the floor only).
OracleResult module_envelope(const std::vector<at::Tensor>& ref64, const std::vector<at::Tensor>& lib,
                             DType dtype, int64_t K);
// The same envelope in plain whole-tensor ATen arithmetic, slow and obviously the formula above:
// the reference module_envelope's fused passes are tested against (equal up to the mean's rounding).
OracleResult module_envelope_reference(const std::vector<at::Tensor>& ref64, const std::vector<at::Tensor>& lib,
                                       DType dtype, int64_t K);

// The synthesized schema: inputs x0, x1, ... at get_inputs()' shapes (fixed dims x0_0, x0_1, ...),
// their dtypes, value domains and every layout; outputs at Model's shapes; oracle `oracle_id`;
// the module-envelope tolerance; forbidden_ops = Model's key operators; a reduction section whose
// K is 1 (the envelope is in the scales), so layout changes are judged within tolerance.
OpSchema module_schema(const ModuleDescription& d, const std::string& source, const std::string& oracle_id);
// True for a schema module_schema made (the shapes and accumulation gates skip it).
bool is_module_schema(const OpSchema& s);
// Why shapes and accumulation skip an unmapped module.
std::string module_skip_reason(const std::string& gate);

// One verification's reference: a sandboxed Python child (its own launcher, so its lifetime is not
// a gate's) holding Model with the candidate's weights. Registered under an oracle id, so run_oracle
// reaches it from every gate; thread-safe (gates run in parallel); answers repeated inputs from a
// cache; restarts its child once when it dies.
class ModuleReference {
 public:
  // Starts the child, loads the module and describes it. nullptr and *error (one line) when the
  // module cannot serve as its own oracle (no Model, no get_inputs, a failing reference).
  static std::unique_ptr<ModuleReference> start(const KernelManifest& manifest, const SandboxOptions& sandbox,
                                                std::string* error);
  // Only the description: the child loads the module, describes get_inputs() and Model, and exits
  // (a mapped module binds its contract to it, problem_contract.h). nullopt and *error (one line).
  static std::optional<ModuleDescription> describe(const KernelManifest& manifest, const SandboxOptions& sandbox,
                                                   std::string* error);
  ~ModuleReference();
  const ModuleDescription& description() const { return desc_; }
  const OpSchema& schema() const { return schema_; }
  std::string sandbox_notes() const { return notes_; }
  OracleResult evaluate(const std::vector<at::Tensor>& inputs);
  int64_t reduction_estimate() const { return K_; }

 private:
  ModuleReference() = default;
  // Starts the child for `manifest` (its own launcher) and returns its description.
  std::optional<ModuleDescription> launch(const KernelManifest& manifest, const SandboxOptions& sandbox,
                                          std::string* error);
  bool open(std::string* error);
  KernelManifest manifest_;
  std::unique_ptr<Launcher> launcher_;
  std::unique_ptr<WorkerSession> session_;
  ModuleDescription desc_;
  OpSchema schema_;
  std::string id_, notes_;
  int64_t K_ = 1;
  std::mutex mu_;
  std::map<std::string, OracleResult> cache_;
  size_t cache_bytes_ = 0;  // the tensors' bytes in cache_
};

// verify_kernel's entry for "op": "module": starts *out and returns its schema, or nullopt with
// *error (one line: not a .py source, no Model, no get_inputs, a failing reference). Sets the
// manifest's module_constants from the reference's description, for the children started after it.
std::optional<OpSchema> start_module_oracle(KernelManifest* manifest, const SandboxOptions& sandbox,
                                            std::unique_ptr<ModuleReference>* out, std::string* error);
// The report's environment.module.oracle: tolerance, K estimate, Model's operators, copied state.
nlohmann::json module_oracle_json(const ModuleReference& ref);

// run_oracle's hook: ids registered by a live ModuleReference ("module:N").
bool is_module_oracle_id(const std::string& id);
OracleResult run_module_oracle(const std::string& id, const std::vector<at::Tensor>& inputs);

}  // namespace gauntlet
