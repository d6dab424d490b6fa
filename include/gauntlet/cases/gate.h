// The gate interface: each gate checks one property of a kernel, in its own sandboxed child.
#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gauntlet/cases/case.h"
#include "gauntlet/schema/manifest.h"
#include "gauntlet/oracle/oracle.h"
#include "gauntlet/sandbox/sandbox.h"
#include "gauntlet/schema/schema.h"
#include "gauntlet/common/types.h"

namespace gauntlet {

struct GateVerdict {
  std::string name;
  Status status = Status::Pass;
  Category category = Category::None;
  std::string message;
  std::string replay;          // path of the replay file (failures and errors)
  std::string outputs_sha256;  // digest of the deciding case's outputs (replay compares it)
  // kInContract or kOutOfContract (contract_scope.h): a failing gate's deciding case's, a passing
  // gate's cases' (kMixedScope for both); "" for a skip.
  std::string scope;
  int cases = 0;               // cases judged
  double seconds = 0;
  nlohmann::json evidence = nlohmann::json::object();
};

// Everything a gate may use. The gate opens its own child with open_session().
struct GateContext {
  const OpSchema& schema;
  const KernelManifest& manifest;
  const CaseSpace& space;
  Launcher& launcher;
  std::string so_path;
  std::string kernel_hash;     // sha256 of the kernel source
  std::string schema_hash;     // sha256 of the schema file
  uint64_t master_seed = 0;
  int budget = 1;              // case-budget multiplier (--budget)
  std::string replay_dir;      // where failing cases are written
  std::string sandbox_note;    // filled by open_session: isolation actually achieved
  // Gates that failed or errored before this one (verify fills it): timing runs only without any.
  std::vector<std::string> earlier_failures;
  // CUDA_DEVICE_MAX_CONNECTIONS of this gate's CUDA children (LoadRequest::hardware_queues); 0:
  // the driver's default. verify sets it per gate (gate_hardware_queues).
  uint32_t cuda_hardware_queues = 0;
  // Where the time goes, accumulated by open_session and run_case (verify reports it per gate).
  struct Timing {
    double spawn = 0;   // starting children and loading the kernel into them
    // Of spawn: waiting for the launcher behind this kernel's other gates, starting the zygote,
    // the zygote's round trip, and within that the clone (SpawnTimes). The rest is the child's
    // start and the load.
    double spawn_lock = 0, spawn_zygote_start = 0, spawn_zygote = 0, spawn_clone = 0;
    // Of the rest, what each CUDA child said of its own start (LoadReply's startup_seconds):
    // its context and first poisoning, and everything before (exec to serve, sandbox, dlopen,
    // CUDA init). Summed over every child, not one a kernel.
    double child_context = 0, child_before_context = 0;
    double inputs = 0;  // generating the cases' input values
    double oracle = 0;  // the fp64 oracle (an unmapped module's reference child included)
    double kernel = 0;  // inside the kernel's entry (as the worker measured it)
    double call = 0;    // whole round trips to the worker (kernel + transfer + checks in the child)
    int children = 0;
  } timing{};
  // Cases run inside and outside the kernel's contract (note_case_scope; the gate's threads share
  // it). verify gives each gate a fresh one.
  struct Scopes {
    std::atomic<int> in{0}, out{0};
  };
  std::shared_ptr<Scopes> scopes = std::make_shared<Scopes>();

  uint64_t case_seed(const std::string& gate, uint64_t case_index) const;
};

// The result of one case run in a child, with the oracle's answer beside it.
struct CaseRun {
  Case c;
  std::vector<at::Tensor> inputs;
  OracleResult oracle;
  Outcome outcome;             // outcome.kind == Ok: outcome.reply.calls[0] holds the outputs
  // Where the schema leaves an output's order free (output_matching.h) the outputs above are the
  // kernel's put in the oracle's order; when they cannot be, they are left as they came and this
  // says which output and row differ (the judge then finds them wrong).
  std::string unmatched;
};

class Gate {
 public:
  virtual ~Gate() = default;
  virtual std::string name() const = 0;
  virtual GateVerdict run(GateContext& ctx) = 0;
  // Called, where the runner allows it, on a gate that runs after the others (timing) as the others
  // start: host work run() would do first (timing: its sets' inputs and fp64 oracles) may start on
  // a thread of the gate's own, which run() then waits for and uses. `ctx` is copied; nothing may
  // escape. Nothing by default.
  virtual void prepare_ahead(const GateContext& /*ctx*/) {}
  // Re-checks one stored case (replay). Gates without per-case checks return harness-error.
  virtual GateVerdict check_one(GateContext& ctx, const Case& c);
};

// The twelve gates and timing, in the SPEC's order (gates/registry.cpp: the one explicit list).
std::vector<std::unique_ptr<Gate>> all_gates();
std::vector<std::string> gate_names();
std::unique_ptr<Gate> make_gate(const std::string& name);
// GateContext::cuda_hardware_queues for the gate: `concurrent_queues` (0: the driver's default) for
// determinism and timing, whose CUDA children need concurrency between streams; 1 for every other.
uint32_t gate_hardware_queues(const std::string& name, uint32_t concurrent_queues);
// Determinism's and timing's hardware queues unless GAUNTLET_CONCURRENT_GATE_QUEUES says otherwise.
// Two keep two streams running at once (the common overlap: a side stream beside the current one;
// corpus/bugs_cuda/determinism/sum_side_stream_partials fails determinism with 2 as with the
// driver's default 8, and with 1: that race is lost at any count), and a two-queue context costs
// about half a default one (0.100 s against 0.194 s, 16 at once, H100) and slows the others'
// creation less: eight processes of four gates ran 11% more kernels an hour (docs/gpu.md,
// thirty-seventh session).
constexpr uint32_t kDefaultConcurrentGateQueues = 2;
// The same with GAUNTLET_CONCURRENT_GATE_QUEUES (read once; unset or invalid:
// kDefaultConcurrentGateQueues; 0: the driver's default).
uint32_t gate_hardware_queues(const std::string& name);
// Determinism's and timing's count as GAUNTLET_CONCURRENT_GATE_QUEUES sets it: also the field's
// standard check's (kbcheck, KernelBench's eval in an audit), which runs a kernel as the field
// does, its side streams beside the current one, and which a default-queue context made the
// dearest child of an audited kernel (0.208 s against 0.108 with 2, H100, thirty-eighth session).
uint32_t concurrent_gate_queues();
// GAUNTLET_CONCURRENT_GATE_QUEUES as given: kDefaultConcurrentGateQueues when unset; false with
// *error when not 0 to 32.
bool concurrent_gate_queues_from_env(uint32_t* queues, std::string* error);
// Where the gate's slot comes among waiting gates (GateSlots::acquire, lowest first): the gates
// that take longest start first. Every gate of gate_names() has its own rank.
int gate_start_rank(const std::string& name);

// --- helpers shared by gates (src/cases/gate_support.cpp) ---

// A gate child's LoadRequest: the kernel's device and, on CUDA, the gate's hardware queues.
void set_load_device(const GateContext& ctx, wire::LoadRequest* request);

// A fresh child with the kernel loaded, or a verdict explaining why not (load-error, ...).
// `entry`: the entry to load when not the manifest's forward entry (the gradients gate's backward).
std::unique_ptr<WorkerSession> open_session(GateContext& ctx, const std::string& gate, GateVerdict* failed,
                                            const std::string& entry = "");
// The same with the load request's other fields chosen by the caller (allocator poison, threads,
// operator recording, guard bytes); an empty so_path or entry means the context's.
std::unique_ptr<WorkerSession> open_session_with(GateContext& ctx, const std::string& gate, GateVerdict* failed,
                                                 wire::LoadRequest request);
// Adds a CUDA child's own start phases (its LoadReply device_info's "startup_seconds") to
// `timing` (child_context, child_before_context); nothing for a CPU child or an unreadable one.
void add_child_startup(const std::string& device_info, GateContext::Timing* timing);
// Materializes the case, runs the oracle and the kernel once (`repeat` calls).
CaseRun run_case(GateContext& ctx, WorkerSession& session, const Case& c, uint32_t repeat = 1);
// Puts every call's outputs of an Ok outcome in the oracle's order where the schema leaves an
// order free (a tie among topk's indices, a set's rows), so gates judge and compare them position
// by position; `inputs` are the call's own. Returns "" or, when they cannot be matched, why (the
// outputs then stay as they came). A no-op for schemas without such freedom.
std::string match_to_oracle(const GateContext& ctx, const std::vector<at::Tensor>& inputs, const AttrMap& attrs,
                            const std::vector<at::Tensor>& oracle_outputs, Outcome& outcome);
// The same for one call's outputs as a plain list (the timing gate's verified outputs).
std::string match_call_to_oracle(const GateContext& ctx, const std::vector<at::Tensor>& inputs, const AttrMap& attrs,
                                 const std::vector<at::Tensor>& oracle_outputs, std::vector<at::Tensor>* outputs);
// A verdict for a kernel outcome that is not Ok (error with its category, or harness-error), with
// its scope; a clean error on a case outside the kernel's contract is a pass (it refused).
GateVerdict verdict_from_outcome(const GateContext& ctx, const std::string& gate, const CaseRun& run);
// Records the digest of the case's first call outputs in the verdict (no-op when it produced none).
void note_outputs(GateVerdict& v, const CaseRun& run);
// Writes the replay file for a failing case and returns its path ("" if it could not be written, or
// `v` is no failure). Sets v.scope from the case when the gate has not.
std::string write_replay(GateContext& ctx, const std::string& gate, const CaseRun& run, GateVerdict& v);
// The expected dtype of output `i` for a case (schema rule "same:x" or a dtype name).
DType expected_output_dtype(const OpSchema& schema, size_t i, const Case& c);
// Evaluates a schema expression (cost model, K) over a case: its dims, int and bool attributes,
// elem_size (the first input's element size) and its inputs' shapes. nullopt when it does not
// evaluate (an unknown name or a syntax error; lint rejects both in shipped schemas).
std::optional<int64_t> eval_case_expr(const std::string& expr, const Case& c);
// Terms per output element for the reduction tolerance (1 when the op is elementwise).
int64_t reduction_terms(const OpSchema& schema, const Case& c);
Status status_for(Outcome::Kind kind);

}  // namespace gauntlet
