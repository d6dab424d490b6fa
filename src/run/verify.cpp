// Orchestrates one kernel's verification: schema, build, gates in sandboxed children, verdict.
#include "gauntlet/run/verify.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <thread>

#include <torch/version.h>

#include "gauntlet/cases/confirm.h"
#include "gauntlet/cases/contract_check.h"
#include "gauntlet/cases/contract_scope.h"
#include "gauntlet/run/root_cause.h"
#include "gauntlet/sandbox/gpu_turn.h"
#include "gauntlet/common/interrupt.h"
#include "gauntlet/build/module_build.h"
#include "gauntlet/oracle/module_oracle.h"
#include "gauntlet/kernelbench/problem_contract.h"
#include "gauntlet/cases/property.h"
#include "gauntlet/version.h"

namespace gauntlet {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

nlohmann::json environment_json(const Launcher& launcher, const std::string& sandbox_note, const std::string& device) {
  utsname u{};
  uname(&u);
  nlohmann::json env;
  env["gauntlet"] = GAUNTLET_VERSION_STRING;
  env["torch"] = TORCH_VERSION;
  env["compiler"] = std::string("g++ ") + __VERSION__;
  env["host"] = std::string(u.sysname) + " " + u.release + " " + u.machine;
  env["cpus"] = sysconf(_SC_NPROCESSORS_ONLN);
  env["device"] = device;
  if (device == "cuda") {
    // The GPU as the worker child saw it (the parent never initializes CUDA); absent when no
    // child loaded the kernel (a build error).
    const nlohmann::json gpu = nlohmann::json::parse(launcher.device_info(), nullptr, false);
    if (gpu.is_object()) env["gpu"] = gpu;
    env["gpu_index"] = launcher.options().gpu_index;
  }
  // What the children actually came from (the zygote may have been unavailable).
  env["sandbox"] = {{"launcher", sandbox_note.rfind("zygote", 0) == 0 ? "zygote" : "fork+exec"},
                    {"isolation", sandbox_note},
                    {"timeout_seconds", launcher.options().timeout_seconds},
                    {"memory_limit_bytes", launcher.options().memory_limit_bytes}};
  return env;
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

template <class Ready>
void GateSlots::wait(std::unique_lock<std::mutex>& lock, Ready ready) {
  if (!lent_) return cv_.wait(lock, ready);
  while (!ready()) cv_.wait_for(lock, std::chrono::milliseconds(50));
}

void GateSlots::acquire() {
  std::unique_lock<std::mutex> lock(mu_);
  wait(lock, [&] { return !exclusive_ && exclusive_waiting_ == 0 && in_use_ < total(); });
  ++in_use_;
}

void GateSlots::release() {
  std::lock_guard<std::mutex> lock(mu_);
  --in_use_;
  cv_.notify_all();
}

void GateSlots::acquire_all() {
  std::unique_lock<std::mutex> lock(mu_);
  ++exclusive_waiting_;
  wait(lock, [&] { return !exclusive_ && in_use_ == 0; });
  --exclusive_waiting_;
  exclusive_ = true;
}

void GateSlots::release_all() {
  std::lock_guard<std::mutex> lock(mu_);
  exclusive_ = false;
  cv_.notify_all();
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

std::optional<KernelReport> verify_kernel(const KernelManifest& given, const VerifyOptions& options,
                                          Launcher& launcher, std::string* error) {
  const auto t0 = std::chrono::steady_clock::now();
  // A Python module is built first (its build step, module_build.h): its reference child and its
  // gate children load what the build made. A module whose extensions fail to compile is one
  // build-error per gate, whatever its oracle.
  KernelManifest manifest = given;
  const bool python = is_python_module(manifest);
  apply_contract_defaults(&manifest);
  // An op's schema is known before anything runs: the contract is checked against it first, so a
  // mistyped contract is a field error, not a build and twelve harness-errors.
  std::optional<OpSchema> schema;
  if (manifest.op != kModuleOp) {
    schema = find_schema(manifest.op, error);
    if (!schema) {
      const ContractIssue issue{"op", *error};
      return (*error = contract_error(manifest, issue), std::nullopt);
    }
    apply_contract_defaults(&manifest, &*schema);
    if (auto issues = check_contract(*schema, &manifest); !issues.empty())
      return (*error = contract_error(manifest, issues[0]), std::nullopt);
  }
  std::optional<BuildResult> module_build;
  if (python && access(manifest.source.c_str(), R_OK) == 0) {
    if (options.progress)
      std::fprintf(stderr, "gauntlet: building %s (its import and build: at most %d s, --build-timeout)\n",
                   manifest.source.c_str(), launcher.options().module_load_seconds);
    module_build = python_module_build(&manifest, launcher);
  }
  const bool unbuilt_module = module_build && !module_build->ok;
  // A module found as a KernelBench problem is promised only its get_inputs(): its contract's dims
  // and dtype become those (problem_contract.h), every other size lies outside it. When the shapes
  // do not fit the schema, the contract keeps the problem's ranks and equal dims, and the report says
  // why; when the reference child cannot describe get_inputs() at all, every gate is a harness error.
  std::optional<ProblemBinding> binding;
  if (python && module_build && module_build->ok && manifest.op != kModuleOp && manifest.shapes_from_get_inputs) {
    binding = bind_problem_contract(*schema, &manifest, launcher.options());
    if (options.progress)
      std::fprintf(stderr, "gauntlet: contract: %s\n",
                   binding->bound ? ("get_inputs()' own shapes, " + binding->text + " (other sizes lie outside it)").c_str()
                  : binding->described ? ("the problem's ranks only; " + binding->why_not).c_str()
                                       : ("unknown, every gate a harness error; " + binding->why_not).c_str());
  }
  std::unique_ptr<ModuleReference> module_ref;  // "op": "module": the module's own Model is the oracle
  if (manifest.op == kModuleOp && unbuilt_module) {
    schema = OpSchema{};  // nothing runs: every gate is the build's verdict
    schema->name = kModuleOp;
  } else if (manifest.op == kModuleOp) {
    schema = start_module_oracle(&manifest, launcher.options(), &module_ref, error);
    if (!schema) return std::nullopt;
    if (auto issues = check_contract(*schema, &manifest); !issues.empty())
      return (*error = contract_error(manifest, issues[0]), std::nullopt);
  }
  if (manifest.device != "cpu" && manifest.device != "cuda") return (*error = "unknown device " + manifest.device, std::nullopt);
  if (access(manifest.source.c_str(), R_OK) != 0)
    return (*error = "cannot read kernel source " + manifest.source, std::nullopt);
  for (const std::string& g : options.gates)
    if (!make_gate(g)) return (*error = "unknown gate '" + g + "'", std::nullopt);

  if (options.progress)
    std::fprintf(stderr, "gauntlet %s: verifying %s (%s), seed %llu\n", GAUNTLET_VERSION_STRING,
                 manifest.source.c_str(), manifest.op.c_str(), (unsigned long long)options.seed);
  KernelReport report;
  report.op = manifest.op;
  report.source = manifest.source;
  report.seed = options.seed;
  report.schema_hash = schema->source_file.empty() ? "" : sha256_file_hex(schema->source_file);

  PythonModuleScope python_scope(launcher, python);
  if (python) {
    report.build = module_build ? *module_build : BuildResult{};
  } else {
    BuildRequest req;
    req.source_path = manifest.source;
    req.entries = {manifest.entry};
    if (!manifest.backward_entry.empty()) req.entries.push_back(manifest.backward_entry);
    req.device = manifest.device;
    report.build = build_kernel(req, default_build_config());
  }
  report.kernel_hash = report.build.source_hash.empty() ? sha256_file_hex(manifest.source) : report.build.source_hash;

  CaseSpace space(*schema, manifest);
  const bool unknown_contract = binding && !binding->described;
  const GpuTurn::Totals turns_before = GpuTurn::process_totals();
  const WorkerPhaseTotals phases_before = worker_phase_totals();
  GateContext base{*schema, manifest, space, launcher, report.build.so_path, report.kernel_hash,
                   report.schema_hash, options.seed, std::max(1, options.budget), options.replay_dir, "", {}, {}, {}};
  // The timing gate's timed loop keeps its GPU turn (gpu_turn.h) from the first timed call to the
  // peaks, so no other gauntlet child on the host runs there in between; entered and left on the
  // timing gate's thread.
  if (manifest.device == "cuda") base.clock_section = gpu_clock_section(gpu_turn_path(launcher.options().gpu_index));
  const std::vector<std::string> names = options.gates.empty() ? gate_names() : options.gates;
  std::vector<GateVerdict> verdicts(names.size());
  std::vector<bool> ran(names.size(), false);
  // A CUDA kernel's gates run --gpu-jobs at a time; their children start side by side but execute
  // on the GPU one at a time (GpuTurn, gpu_turn.h): contexts that run at once time-slice the GPU,
  // which on the H200 made each gate 20-50x slower (docs/gpu.md).
  GateSlots own_slots(std::max(1, manifest.device == "cuda" ? options.gpu_jobs : options.jobs),
                      manifest.device == "cuda" ? nullptr : options.lent_slots);
  GateSlots& slots = options.slots ? *options.slots : own_slots;
  std::mutex report_mu;  // progress lines, on_gate, sandbox_note
  std::atomic<bool> own_hang_shown{false}, own_oom_shown{false};
  std::atomic<bool>& hang_shown_alone = options.hang_shown_alone ? *options.hang_shown_alone : own_hang_shown;
  std::atomic<bool>& oom_shown_alone = options.oom_shown_alone ? *options.oom_shown_alone : own_oom_shown;
  std::vector<char> taken(names.size(), 0);  // by another lane (options.claim)

  // Runs gate `i` in its own context (the gates of a kernel may run in parallel threads).
  auto run_one = [&](size_t i, const std::vector<std::string>& earlier_failures, bool exclusive) {
    const std::string& name = names[i];
    const auto g0 = std::chrono::steady_clock::now();
    GateVerdict v;
    v.name = name;
    // Another audit lane may take any gate not yet started (options.claim); a gate that needs no
    // slot (the kernel did not build) is claimed at once.
    const bool runs = report.build.ok && !space.dtypes().empty() && !unknown_contract;
    if (!runs && options.claim && !options.claim(name)) {
      taken[i] = 1;
      return;
    }
    if (!report.build.ok) {
      v.status = report.build.harness_fault ? Status::HarnessError : Status::Error;
      v.category = report.build.harness_fault ? Category::HarnessError
                   : report.build.timed_out   ? Category::Timeout
                                              : Category::BuildError;
      v.message = "the kernel did not build: " + report.build.error;
    } else if (unknown_contract) {
      // The contract is the problem's get_inputs(), which gauntlet could not read (the reference
      // child failed, the problem's inputs outgrew the worker's limits): judging the kernel on
      // any other contract could charge it with cases its problem never promised.
      v.status = Status::HarnessError;
      v.category = Category::HarnessError;
      v.message = "gauntlet could not read the kernel's contract, its problem's get_inputs(): " + binding->why_not;
    } else if (space.dtypes().empty()) {
      v.status = Status::HarnessError;
      v.category = Category::HarnessError;
      v.message = "the manifest's dtypes leave nothing of the schema's domain";
    } else {
      GateContext::Timing time;
      int scoped_in = 0, scoped_out = 0;
      std::string note;
      std::unique_ptr<Gate> gate = make_gate(name);
      auto run_gate = [&] {
        std::unique_lock<std::mutex> lock(report_mu);
        GateContext ctx = base;
        lock.unlock();
        ctx.cuda_hardware_queues = gate_hardware_queues(name);
        ctx.earlier_failures = earlier_failures;
        ctx.scopes = std::make_shared<GateContext::Scopes>();
        GateVerdict r = gate->run(ctx);
        time = ctx.timing;
        scoped_in = ctx.scopes->in, scoped_out = ctx.scopes->out;
        note = ctx.sandbox_note;
        return r;
      };
      exclusive ? slots.acquire_all() : slots.acquire();
      if (options.claim && !options.claim(name)) {
        exclusive ? slots.release_all() : slots.release();
        taken[i] = 1;
        return;
      }
      auto run_in_section = [&] {
        struct Section {  // left on every way out, a harness exception included
          const std::function<void(bool)>& hook;
          explicit Section(const std::function<void(bool)>& h) : hook(h) { if (hook) hook(true); }
          ~Section() { if (hook) hook(false); }
        } section(options.gate_section);
        return run_gate();
      };
      v = run_in_section();
      // A timeout or an out-of-memory among gates sharing the machine may be the neighbours'
      // doing, never the kernel's: such an error is only reported once it recurs alone. Once one
      // has recurred alone, the kernel has shown it, and its later ones stand without a rerun
      // (a kernel that hangs would otherwise cost every gate its timeout twice).
      const bool shared_error = !exclusive && slots.total() > 1 && v.status == Status::Error &&
                                (v.category == Category::Timeout || v.category == Category::OutOfMemory);
      std::atomic<bool>& shown = v.category == Category::Timeout ? hang_shown_alone : oom_shown_alone;
      if (shared_error && !shown) {
        slots.release();
        slots.acquire_all();
        exclusive = true;
        if (!shown) {
          const Category first = v.category;
          v = run_in_section();
          v.evidence["rerun_alone"] = true;
          if (v.status == Status::Error && v.category == first) shown = true;
        }
      }
      if (shared_error && !v.evidence.contains("rerun_alone"))
        v.evidence["rerun_alone"] = "not rerun: an earlier gate's error of this kind recurred alone";
      // A crash, timeout or protocol violation is the kernel's only once its deciding case fails
      // again in a fresh child (SPEC "Seeds and replay"); otherwise it is a harness error. A
      // timeout that already recurred alone is confirmed, and once one has, the kernel has shown
      // it: later ones stand (a hanging kernel must not pay every timeout twice).
      const bool recurred_alone = v.evidence.value("rerun_alone", nlohmann::json()) == true;
      if (needs_confirmation(v) && !recurred_alone && !(v.category == Category::Timeout && hang_shown_alone)) {
        Case decider;
        const bool has_case = deciding_case(v, &decider);
        v = confirm_failure(v, [&] {
          if (!has_case) return run_in_section();  // no recorded case: the whole gate, once more
          std::unique_lock<std::mutex> lock(report_mu);
          GateContext ctx = base;
          lock.unlock();
          ctx.cuda_hardware_queues = gate_hardware_queues(name);
          return gate->check_one(ctx, decider);
        });
        if (v.category == Category::Timeout) hang_shown_alone = true;
      } else if (needs_confirmation(v)) {
        v.evidence["confirmed"] = recurred_alone ? "recurred when the gate ran again alone" : "an earlier timeout of this kernel recurred";
      }
      exclusive ? slots.release_all() : slots.release();
      settle_scope(v, scoped_in, scoped_out);
      if (time.children > 0)
        v.evidence["time"] = {{"children", time.children}, {"spawn_seconds", time.spawn},
                            {"inputs_seconds", time.inputs}, {"oracle_seconds", time.oracle},
                            {"kernel_seconds", time.kernel},
                            {"worker_round_trip_seconds", time.call}};
      // Each CUDA child's hardware queues (0: the driver's default), for the context floor.
      if (time.children > 0 && manifest.device == "cuda") v.evidence["time"]["hardware_queues"] = gate_hardware_queues(name);
      std::lock_guard<std::mutex> lock(report_mu);
      if (!note.empty()) base.sandbox_note = note;
    }
    v.seconds = seconds_since(g0);
    // Interrupted: this verdict may be of the interrupt's killing (a child dead, a build cut off),
    // never the kernel's; it is neither printed nor stored, and the handler's exit follows.
    if (interrupt_requested()) wait_for_interrupt_exit();
    std::lock_guard<std::mutex> lock(report_mu);
    if (options.progress) std::fprintf(stderr, "  %-15s %-13s %.2fs\n", name.c_str(), status_name(v.status), v.seconds);
    if (options.on_gate) options.on_gate(v);
    verdicts[i] = std::move(v);
    ran[i] = true;
  };

  // The twelve correctness gates, in parallel up to the slots; timing after them, alone, since it
  // runs only for kernels that passed them and its clocks must not share the machine.
  std::vector<std::thread> threads;
  for (size_t i = 0; i < names.size(); ++i) {
    if (auto k = options.known.find(names[i]); k != options.known.end()) {
      verdicts[i] = k->second;
      ran[i] = true;
    } else if (names[i] != "timing") {
      if (slots.total() > 1 || options.slots) threads.emplace_back(run_one, i, std::vector<std::string>{}, false);
      else run_one(i, {}, false);
    }
  }
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < names.size(); ++i)
    if (taken[i]) {
      verdicts[i] = options.await_taken(names[i]);
      ran[i] = true;
    }
  for (size_t i = 0; i < names.size(); ++i) {
    if (ran[i]) continue;
    std::vector<std::string> earlier;
    for (size_t j = 0; j < names.size(); ++j)
      if (ran[j] && fails_in_contract(verdicts[j])) earlier.push_back(names[j]);
    // On the CPU timing needs every core to itself; on a GPU only its timed loop needs the GPU,
    // which the clock section serializes, so other kernels' timing gates may prepare meanwhile.
    run_one(i, earlier, manifest.device != "cuda");
  }
  for (GateVerdict& v : verdicts) report.gates.push_back(std::move(v));
  GateContext& ctx = base;
  report.verdict = kernel_verdict(report.gates);
  report.root_cause = root_cause(report.gates);
  report.environment = environment_json(launcher, ctx.sandbox_note, manifest.device);
  if (manifest.device == "cuda") {
    // This kernel's children's turns on the GPU (an audit lane or verify runs one kernel at a time).
    const GpuTurn::Totals t = GpuTurn::process_totals();
    report.environment["gpu_turns"] = {{"turns", t.turns - turns_before.turns},
                                       {"waited_seconds", t.waited_seconds - turns_before.waited_seconds},
                                       {"held_seconds", t.held_seconds - turns_before.held_seconds},
                                       {"overruns", t.overruns - turns_before.overruns},
                                       {"bound_seconds", launcher.options().gpu_turn_bound_seconds}};
    nlohmann::json by_length = nlohmann::json::array();
    for (int i = 0; i < GpuTurn::kHeldSlots; ++i) {
      const long n = t.turns_by_length[i] - turns_before.turns_by_length[i];
      if (n == 0) continue;
      by_length.push_back({{"up_to_ms", i < GpuTurn::kHeldSlots - 1 ? nlohmann::json(GpuTurn::kHeldEdges[i] * 1000) : nlohmann::json()},
                           {"turns", n},
                           {"held_seconds", t.held_by_length[i] - turns_before.held_by_length[i]}});
    }
    report.environment["gpu_turns"]["by_length"] = by_length;
    // Inside the CUDA children's cases (native worker), where the host time went.
    const WorkerPhaseTotals p = worker_phase_totals();
    if (p.cases > phases_before.cases)
      report.environment["worker_phases"] = {{"cases", p.cases - phases_before.cases},
                                             {"poison_seconds", p.poison_seconds - phases_before.poison_seconds},
                                             {"to_device_seconds", p.to_device_seconds - phases_before.to_device_seconds},
                                             {"kernel_seconds", p.kernel_seconds - phases_before.kernel_seconds},
                                             {"from_device_seconds", p.from_device_seconds - phases_before.from_device_seconds},
                                             {"check_seconds", p.check_seconds - phases_before.check_seconds},
                                             {"case_seconds", p.case_seconds - phases_before.case_seconds},
                                             {"reserve_seconds", p.reserve_seconds - phases_before.reserve_seconds}};
  }
  if (python) report.environment["module"] = {{"kind", "python"}, {"worker", "python/gauntlet_pyworker.py"}, {"entry", manifest.entry}};
  if (module_ref) report.environment["module"]["oracle"] = module_oracle_json(*module_ref);
  if (binding) report.environment["contract"] = problem_binding_json(*binding);
  if (!report.build.ok || report.build.cache_hit || report.build.seconds > 0)
    report.environment["build"] = {{"cache_hit", report.build.cache_hit}, {"seconds", report.build.seconds},
                                   {"prelude", report.build.prelude}};
  report.seconds = seconds_since(t0);
  return report;
}

std::optional<KbCheckResult> kb_style_check(const KernelManifest& manifest, Launcher& launcher, std::string* error) {
  auto schema = find_schema(manifest.op, error);
  if (!schema) return std::nullopt;
  BuildRequest req;
  req.source_path = manifest.source;
  req.entries = {manifest.entry};
  req.device = manifest.device;
  const bool python = is_python_module(manifest);
  PythonModuleScope python_scope(launcher, python);
  KernelManifest built = manifest;
  BuildResult build = python ? python_module_build(&built, launcher) : build_kernel(req, default_build_config());
  KbCheckResult result;
  if (!build.ok) return (result.reason = "build failed: " + build.error, result);
  CaseSpace space(*schema, built);
  DType dtype = DType::Float32;
  if (std::find(space.dtypes().begin(), space.dtypes().end(), dtype) == space.dtypes().end()) {
    if (space.dtypes().empty()) return (*error = "no dtype to check", std::nullopt);
    dtype = space.dtypes()[0];
  }
  GateContext ctx{*schema, built, space, launcher, build.so_path, build.source_hash, "", 0, 1, "", "", {}, {}, {}};
  GateVerdict failed;
  auto session = open_session(ctx, "kbcheck", &failed);
  if (!session) return (result.reason = failed.message, result);
  for (int trial = 0; trial < 5; ++trial) {
    Case c;
    if (!space.fixed_case(dtype, Distribution::Uniform01, 0x4B42ull + uint64_t(trial), &c, error)) return std::nullopt;
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
  result.reason = "5 trials of U[0,1) inputs at one shape pass allclose(1e-2)";
  return result;
}

int exit_code_for(const KernelReport& r, bool allow_unsafe) {
  for (const GateVerdict& v : r.gates)
    if (v.status == Status::HarnessError) return 2;
  return r.verdict == "pass" || (allow_unsafe && r.verdict == "unsafe") ? 0 : 1;
}

}  // namespace gauntlet
