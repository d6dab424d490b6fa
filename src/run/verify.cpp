// Orchestrates one kernel's verification: schema, build, gates in sandboxed children, verdict.
#include "gauntlet/run/verify.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "gate_runner.h"
#include "kernel_environment.h"
#include "gauntlet/cases/contract_check.h"
#include "gauntlet/cases/contract_scope.h"
#include "gauntlet/run/root_cause.h"
#include "gauntlet/sandbox/device_nodes.h"
#include "gauntlet/sandbox/gpu_turn.h"
#include "gauntlet/common/wire.h"
#include "gauntlet/build/module_build.h"
#include "gauntlet/oracle/module_oracle.h"
#include "gauntlet/kernelbench/problem_contract.h"
#include "gauntlet/cases/property.h"
#include "gauntlet/version.h"

namespace gauntlet {
std::string why_not_runnable_here(const KernelManifest& manifest) {
  if (std::string no_cuda; manifest.device == "cuda" && !cuda_device_present(&no_cuda))
    return "a CUDA kernel, and this machine cannot run it: " + no_cuda;
  return dtypes_unavailable_for(manifest);
}

std::string dtypes_unavailable_for(const KernelManifest& manifest) {
  if (manifest.op == kModuleOp) return "";  // a module's dtypes are its problem's, known once it runs
  std::string ignored;
  const std::optional<OpSchema> schema = find_schema(manifest.op, &ignored);
  if (!schema) return "";  // verify says what is wrong with it
  const InputSpec* case_input = schema->case_dtype_input();
  for (const InputSpec& in : schema->inputs) {
    std::vector<DType> wanted = in.dtypes;
    if (&in == case_input && !manifest.dtypes.empty())  // the kernel's own narrowing of the case dtypes
      wanted.erase(std::remove_if(wanted.begin(), wanted.end(), [&](DType d) {
                     return std::find(manifest.dtypes.begin(), manifest.dtypes.end(), d) == manifest.dtypes.end();
                   }), wanted.end());
    if (wanted.empty()) continue;
    if (wire::none_available(wanted))
      return manifest.op + ": input " + in.name + " is " + dtype_name(wanted[0]) + ", and " + wire::dtype_unavailable(wanted[0]);
  }
  return "";
}

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Puts the launcher in Python-module mode for one verification (selftest shares one launcher).
struct PythonModuleScope {
  Launcher& launcher;
  bool was;
  PythonModuleScope(Launcher& l, bool on) : launcher(l), was(l.python_module()) { l.set_python_module(on); }
  ~PythonModuleScope() { launcher.set_python_module(was); }
};

}  // namespace

BuildResult python_module_build(KernelManifest* manifest, Launcher& launcher) {
  BuildResult b = build_python_module(*manifest, launcher);
  manifest->module_build_dir = b.module_dir;
  return b;
}

std::optional<OpSchema> find_schema(const std::string& op, std::string* error) {
  const std::string dir = default_schema_dir();
  std::vector<SchemaIssue> issues;
  const std::string path = dir + "/" + op + ".json";
  if (access(path.c_str(), R_OK) != 0) {
    *error = "unknown op '" + op + "' (no schema " + path + "; `gauntlet schemas list` shows the known ops)";
    return std::nullopt;
  }
  auto s = load_schema_file(path, &issues);
  if (!s) {
    *error = "schema " + path + " is invalid: " + (issues.empty() ? "" : issues[0].field + ": " + issues[0].message);
    return std::nullopt;
  }
  return s;
}

namespace {

// A kernel made ready to verify: its contract checked against its op's schema, a Python module
// built and its contract bound to its problem, a module's own Model started as its oracle.
struct PreparedKernel {
  KernelManifest manifest;
  bool python = false;
  std::optional<OpSchema> schema;
  std::optional<BuildResult> module_build;
  std::optional<ProblemBinding> binding;
  std::unique_ptr<ModuleReference> module_ref;  // "op": "module": the module's own Model is the oracle
};

// False with *error (one line) for what is the caller's to fix: the contract, the device, the
// source, a gate name. Filled in place: the module oracle keeps the manifest it was started with.
bool prepare_kernel(const VerifyOptions& options, Launcher& launcher, PreparedKernel* k, std::string* error) {
  KernelManifest& manifest = k->manifest;
  // A Python module is built first (its build step, module_build.h): its reference child and its
  // gate children load what the build made. A module whose extensions fail to compile is one
  // build-error per gate, whatever its oracle.
  k->python = is_python_module(manifest);
  apply_contract_defaults(&manifest);
  // An op's schema is known before anything runs: the contract is checked against it first, so a
  // mistyped contract is a field error, not a build and twelve harness-errors.
  if (manifest.op != kModuleOp) {
    k->schema = find_schema(manifest.op, error);
    if (!k->schema) {
      const ContractIssue issue{"op", *error};
      return (*error = contract_error(manifest, issue), false);
    }
    apply_contract_defaults(&manifest, &*k->schema);
    if (auto issues = check_contract(*k->schema, &manifest); !issues.empty())
      return (*error = contract_error(manifest, issues[0]), false);
  }
  if (k->python && access(manifest.source.c_str(), R_OK) == 0) {
    if (options.progress)
      std::fprintf(stderr, "gauntlet: building %s (its import and build: at most %d s, --build-timeout)\n",
                   manifest.source.c_str(), launcher.options().module_load_seconds);
    k->module_build = python_module_build(&manifest, launcher);
  }
  const bool built_module = k->module_build && k->module_build->ok;
  // A module found as a KernelBench problem is promised only its get_inputs(): its contract's dims
  // and dtype become those (problem_contract.h), every other size lies outside it. When the shapes
  // do not fit the schema, the contract keeps the problem's ranks and equal dims, and the report says
  // why; when the reference child cannot describe get_inputs() at all, every gate is a harness error.
  if (k->python && built_module && manifest.op != kModuleOp && manifest.shapes_from_get_inputs) {
    const ProblemBinding& binding = *(k->binding = bind_problem_contract(*k->schema, &manifest, launcher.options()));
    if (options.progress)
      std::fprintf(stderr, "gauntlet: contract: %s\n",
                   binding.bound ? ("get_inputs()' own shapes, " + binding.text + " (other sizes lie outside it)").c_str()
                  : binding.described ? ("the problem's ranks only; " + binding.why_not).c_str()
                                      : ("unknown, every gate a harness error; " + binding.why_not).c_str());
  }
  if (manifest.op == kModuleOp && k->module_build && !built_module) {
    k->schema = OpSchema{};  // nothing runs: every gate is the build's verdict
    k->schema->name = kModuleOp;
  } else if (manifest.op == kModuleOp) {
    k->schema = start_module_oracle(&manifest, launcher.options(), &k->module_ref, error);
    if (!k->schema) return false;
    if (auto issues = check_contract(*k->schema, &manifest); !issues.empty())
      return (*error = contract_error(manifest, issues[0]), false);
  }
  if (manifest.device != "cpu" && manifest.device != "cuda") return (*error = "unknown device " + manifest.device, false);
  if (access(manifest.source.c_str(), R_OK) != 0) return (*error = "cannot read kernel source " + manifest.source, false);
  for (const std::string& g : options.gates)
    if (!make_gate(g)) return (*error = "unknown gate '" + g + "'", false);
  return true;
}

// A native kernel's build (a Python module was built while it was prepared).
BuildResult build_for_verify(const PreparedKernel& k) {
  if (k.python) return k.module_build ? *k.module_build : BuildResult{};
  return build_kernel(native_build_request(k.manifest), default_build_config());
}

// The report's environment once the gates ran: where, how the GPU was used, what the module and
// its contract were, and the build.
void describe_environment(const PreparedKernel& k, const Launcher& launcher, const std::string& sandbox_note,
                          const GpuCounters& before, KernelReport* report) {
  report->environment = environment_json(launcher, sandbox_note, k.manifest.device);
  if (k.manifest.device == "cuda") add_gpu_usage(&report->environment, before, launcher);
  if (k.python) report->environment["module"] = {{"kind", "python"}, {"worker", "python/gauntlet_pyworker.py"}, {"entry", k.manifest.entry}};
  if (k.module_ref) report->environment["module"]["oracle"] = module_oracle_json(*k.module_ref);
  if (k.binding) report->environment["contract"] = problem_binding_json(*k.binding);
  const BuildResult& build = report->build;
  if (!build.ok || build.cache_hit || build.seconds > 0)
    report->environment["build"] = {{"cache_hit", build.cache_hit}, {"seconds", build.seconds}, {"prelude", build.prelude}};
}

}  // namespace

std::optional<KernelReport> verify_kernel(const KernelManifest& given, const VerifyOptions& options,
                                          Launcher& launcher, std::string* error) {
  const auto t0 = std::chrono::steady_clock::now();
  PreparedKernel k;
  k.manifest = given;
  if (!prepare_kernel(options, launcher, &k, error)) return std::nullopt;
  const KernelManifest& manifest = k.manifest;
  if (options.progress)
    std::fprintf(stderr, "gauntlet %s: verifying %s (%s), seed %llu\n", GAUNTLET_VERSION_STRING,
                 manifest.source.c_str(), manifest.op.c_str(), (unsigned long long)options.seed);
  KernelReport report;
  report.op = manifest.op;
  report.source = manifest.source;
  report.seed = options.seed;
  report.schema_hash = k.schema->source_file.empty() ? "" : sha256_file_hex(k.schema->source_file);

  PythonModuleScope python_scope(launcher, k.python);
  report.build = build_for_verify(k);
  report.kernel_hash = report.build.source_hash.empty() ? sha256_file_hex(manifest.source) : report.build.source_hash;

  CaseSpace space(*k.schema, manifest);
  const GpuCounters before = GpuCounters::now();
  GateContext base{*k.schema, manifest, space, launcher, report.build.so_path, report.kernel_hash,
                   report.schema_hash, options.seed, std::max(1, options.budget), options.replay_dir, "", {}, {}};
  const Unrunnable unrunnable{report.build, k.binding && !k.binding->described, k.binding ? k.binding->why_not : "",
                              space.dtypes().empty()};
  GateRunner runner(options.gates.empty() ? gate_names() : options.gates, options, base, unrunnable,
                    manifest.device == "cuda");
  report.gates = runner.run_all();
  report.verdict = kernel_verdict(report.gates);
  report.root_cause = root_cause(report.gates);
  describe_environment(k, launcher, base.sandbox_note, before, &report);
  report.seconds = seconds_since(t0);
  return report;
}

// The entries are part of the build cache's key, so a request naming fewer of them (the KernelBench-style check once named only the
// forward entry) rebuilds the kernel from scratch (on the GPU host an nvcc build, ~28 s a kernel
// with a backward entry in every audit).
BuildRequest native_build_request(const KernelManifest& m) {
  BuildRequest req;
  req.source_path = m.source;
  req.entries = {m.entry};
  if (!m.backward_entry.empty()) req.entries.push_back(m.backward_entry);
  req.device = m.device;
  return req;
}

std::optional<KbCheckResult> kb_style_check(const KernelManifest& manifest, Launcher& launcher, std::string* error) {
  auto schema = find_schema(manifest.op, error);
  if (!schema) return std::nullopt;
  const bool python = is_python_module(manifest);
  PythonModuleScope python_scope(launcher, python);
  KernelManifest built = manifest;
  BuildResult build = python ? python_module_build(&built, launcher)
                             : build_kernel(native_build_request(manifest), default_build_config());
  KbCheckResult result;
  result.build_cache_hit = build.cache_hit;
  if (!build.ok) return (result.reason = "build failed: " + build.error, result);
  CaseSpace space(*schema, built);
  DType dtype = DType::Float32;
  if (std::find(space.dtypes().begin(), space.dtypes().end(), dtype) == space.dtypes().end()) {
    if (space.dtypes().empty()) return (*error = "no dtype to check", std::nullopt);
    dtype = space.dtypes()[0];
  }
  GateContext ctx{*schema, built, space, launcher, build.so_path, build.source_hash, "", 0, 1, "", "", {}, {}, {}};
  ctx.cuda_hardware_queues = concurrent_gate_queues();  // a CUDA child's only (gate_support.cpp)
  GateVerdict failed;
  result.children = 1;
  if (built.device == "cuda") result.hardware_queues = ctx.cuda_hardware_queues;
  auto session = open_session(ctx, "kbcheck", &failed);
  if (!session) return (result.reason = failed.message, result);
  for (int trial = 0; trial < 5; ++trial) {
    Case c;
    if (!space.fixed_case(dtype, Distribution::Uniform01, 0x4B42ull + uint64_t(trial), &c, error)) return std::nullopt;
    // Keys as a KernelBench problem draws them (torch.randint): uniform over their range, never
    // the schema's skew (zipf, all equal), which is the gates' to try.
    for (TensorRecipe& r : c.tensors)
      if (!r.offsets && r.spread != Spread::Uniform) r.spread = Spread::Uniform;
    CaseRun run = run_case(ctx, *session, c);
    if (run.outcome.kind != Outcome::Kind::Ok) return (result.reason = "trial " + std::to_string(trial) + ": " + run.outcome.message, result);
    const auto& outs = run.outcome.reply.calls.at(0).outputs;
    if (outs.size() != run.oracle.outputs.size()) return (result.reason = "output count differs", result);
    for (size_t i = 0; i < outs.size(); ++i) {
      if (outs[i].sizes() != run.oracle.outputs[i].sizes()) return (result.reason = "output shape differs", result);
      // The reference a KernelBench-style harness uses: the library op in the same dtype.
      at::Tensor ref = run.oracle.outputs[i].to(outs[i].scalar_type()).to(at::kDouble);
      at::Tensor got = outs[i].to(at::kDouble);
      if (!at::allclose(got, ref, 1e-2, 1e-2))
        return (result.reason = "trial " + std::to_string(trial) + ": allclose(rtol=1e-2, atol=1e-2) fails", result);
    }
  }
  result.accepted = true;
  result.reason = "5 trials of U[0,1) inputs (uniform keys) at one shape pass allclose(1e-2)";
  return result;
}

int exit_code_for(const KernelReport& r, bool allow_unsafe) {
  for (const GateVerdict& v : r.gates)
    if (v.status == Status::HarnessError) return 2;
  return r.verdict == "pass" || (allow_unsafe && r.verdict == "unsafe") ? 0 : 1;
}

}  // namespace gauntlet
