// Runs one kernel's gates: slots and threads, reruns alone of errors that sharing may have caused,
// confirmation of crashes in a fresh child, and each verdict's timing evidence.
#include "gate_runner.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

#include "gauntlet/cases/confirm.h"
#include "gauntlet/cases/contract_scope.h"
#include "gauntlet/common/interrupt.h"
#include "gauntlet/common/trace.h"
#include "gauntlet/sandbox/gpu_slots.h"
#include "gauntlet/sandbox/gpu_turn.h"

namespace gauntlet {

struct GateRunner::GateRun {
  std::string name;
  std::vector<std::string> earlier_failures;
  std::unique_ptr<Gate> gate;
  GateContext::Timing time;
  int scoped_in = 0, scoped_out = 0;
  std::string note;
};

GateRunner::GateRunner(std::vector<std::string> names, const VerifyOptions& options, GateContext& base,
                       Unrunnable unrunnable, bool cuda)
    : names_(std::move(names)),
      options_(options),
      base_(base),
      unrunnable_(std::move(unrunnable)),
      cuda_(cuda),
      // A CUDA kernel's gates run --gpu-jobs at a time; their children start side by side but
      // execute on the GPU one at a time (GpuTurn, gpu_turn.h): contexts that run at once
      // time-slice the GPU, which on the H200 made each gate 20-50x slower (docs/gpu.md).
      own_slots_(std::max(1, cuda ? options.gpu_jobs : options.jobs), cuda ? nullptr : options.lent_slots),
      slots_(options.slots ? *options.slots : own_slots_),
      hang_shown_alone_(options.hang_shown_alone ? *options.hang_shown_alone : own_hang_shown_),
      oom_shown_alone_(options.oom_shown_alone ? *options.oom_shown_alone : own_oom_shown_),
      verdicts_(names_.size()),
      ran_(names_.size(), false),
      taken_(names_.size(), 0),
      ahead_(names_.size()) {}

bool gates_start_in_table_order() {
  const char* v = std::getenv("GAUNTLET_GATE_START_ORDER");
  return v && std::string(v) == "table";
}

bool prepare_ahead_wanted(bool cuda) {
  const char* v = std::getenv("GAUNTLET_PREPARE_AHEAD");
  if (v && std::string(v) == "1") return true;
  if (v && std::string(v) == "0") return false;
  return cuda;
}

std::vector<GateVerdict> GateRunner::run_all() {
  // The twelve correctness gates, in parallel up to the slots; timing after them, alone, since it
  // runs only for kernels that passed them and its clocks must not share the machine.
  std::vector<std::thread> threads;
  // Timing's sets are made meanwhile, so that its oracles are not the last thing a kernel waits for.
  if (!unrunnable_.any() && prepare_ahead_wanted(cuda_))
    for (size_t i = 0; i < names_.size(); ++i)
      if (names_[i] == "timing" && !options_.known.count(names_[i])) {
        ahead_[i] = make_gate(names_[i]);
        ahead_[i]->prepare_ahead(copy_of_base());
      }
  std::vector<size_t> correctness;
  for (size_t i = 0; i < names_.size(); ++i) {
    if (auto k = options_.known.find(names_[i]); k != options_.known.end()) {
      verdicts_[i] = k->second;
      ran_[i] = true;
    } else if (names_[i] != "timing") {
      correctness.push_back(i);
    }
  }
  if (slots_.total() > 1 || options_.slots) {
    // Lowest start rank first (gate_start_rank: the longest first), each thread started once the
    // one before is in the slots' line. Started in the table's order, the free slots went to
    // contract, accuracy, special-values and subnormals, the shortest gates, while the longest
    // waited for them (an H100 trace, docs/gpu.md, fortieth session): the rank only ordered gates
    // that found no slot free.
    if (!gates_start_in_table_order())
      std::stable_sort(correctness.begin(), correctness.end(),
                     [&](size_t a, size_t b) { return gate_start_rank(names_[a]) < gate_start_rank(names_[b]); });
    for (size_t i : correctness) {
      auto queued = std::make_shared<std::promise<void>>();
      auto once = std::make_shared<std::once_flag>();
      std::function<void()> in_line = [queued, once] { std::call_once(*once, [&] { queued->set_value(); }); };
      std::future<void> started = queued->get_future();
      threads.emplace_back([this, i, in_line] {
        run_one(i, {}, false, in_line);
        in_line();  // a gate that took no slot (claimed by another lane, or unrunnable)
      });
      started.wait();
    }
  } else {
    for (size_t i : correctness) run_one(i, {}, false);
  }
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < names_.size(); ++i)
    if (taken_[i]) {
      verdicts_[i] = options_.await_taken(names_[i]);
      ran_[i] = true;
    }
  for (size_t i = 0; i < names_.size(); ++i) {
    if (ran_[i]) continue;
    std::vector<std::string> earlier;
    for (size_t j = 0; j < names_.size(); ++j)
      if (ran_[j] && fails_in_contract(verdicts_[j])) earlier.push_back(names_[j]);
    // On the CPU timing needs every core to itself; on a GPU only its timed loop needs the GPU,
    // which the clock section serializes, so other kernels' timing gates may prepare meanwhile.
    run_one(i, earlier, !cuda_);
  }
  return std::move(verdicts_);
}

// Runs gate `i` in its own context (the gates of a kernel may run in parallel threads).
void GateRunner::run_one(size_t i, const std::vector<std::string>& earlier_failures, bool exclusive,
                         const std::function<void()>& queued) {
  const std::string& name = names_[i];
  const auto g0 = std::chrono::steady_clock::now();
  GateVerdict v;
  v.name = name;
  // Another audit lane may take any gate not yet started (options.claim); a gate that needs no
  // slot (the kernel did not build) is claimed at once.
  if (unrunnable_.any() && options_.claim && !options_.claim(name)) {
    taken_[i] = 1;
    return;
  }
  if (unrunnable_.any()) {
    v = verdict_without_running(name);
  } else if (!run_in_slot(i, earlier_failures, exclusive, &v, queued)) {
    taken_[i] = 1;
    return;
  }
  v.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - g0).count();
  // Interrupted: this verdict may be of the interrupt's killing (a child dead, a build cut off),
  // never the kernel's; it is neither printed nor stored, and the handler's exit follows.
  if (interrupt_requested()) wait_for_interrupt_exit();
  std::lock_guard<std::mutex> lock(report_mu_);
  if (options_.progress) std::fprintf(stderr, "  %-15s %-13s %.2fs\n", name.c_str(), status_name(v.status), v.seconds);
  if (options_.on_gate) options_.on_gate(v);
  verdicts_[i] = std::move(v);
  ran_[i] = true;
}

GateVerdict GateRunner::verdict_without_running(const std::string& name) const {
  GateVerdict v;
  v.name = name;
  const BuildResult& build = unrunnable_.build;
  if (!build.ok) {
    v.status = build.harness_fault ? Status::HarnessError : Status::Error;
    v.category = build.harness_fault ? Category::HarnessError
                 : build.timed_out   ? Category::Timeout
                                     : Category::BuildError;
    v.message = "the kernel did not build: " + build.error;
  } else if (unrunnable_.unknown_contract) {
    // The contract is the problem's get_inputs(), which gauntlet could not read (the reference
    // child failed, the problem's inputs outgrew the worker's limits): judging the kernel on
    // any other contract could charge it with cases its problem never promised.
    v.status = Status::HarnessError;
    v.category = Category::HarnessError;
    v.message = "gauntlet could not read the kernel's contract, its problem's get_inputs(): " + unrunnable_.why_unknown;
  } else {
    v.status = Status::HarnessError;
    v.category = Category::HarnessError;
    v.message = "the manifest's dtypes leave nothing of the schema's domain";
  }
  return v;
}

GateContext GateRunner::copy_of_base() {
  std::lock_guard<std::mutex> lock(report_mu_);
  return base_;
}

// The gate in its slot: run, rerun alone or confirm when needed, and keep what its children
// measured. False when another lane took the gate while this one waited for the slot.
bool GateRunner::run_in_slot(size_t i, const std::vector<std::string>& earlier_failures, bool exclusive, GateVerdict* v,
                             const std::function<void()>& queued) {
  GateRun run{names_[i], earlier_failures, ahead_[i] ? std::move(ahead_[i]) : make_gate(names_[i]), {}, 0, 0, ""};
  const int64_t asked_ns = monotonic_ns();
  if (exclusive && queued) queued();
  exclusive ? slots_.acquire_all() : slots_.acquire(gate_start_rank(run.name), queued);
  const int64_t slot_ns = monotonic_ns();
  trace::interval("slot_wait", asked_ns, slot_ns, run.name);
  if (options_.claim && !options_.claim(run.name)) {
    exclusive ? slots_.release_all() : slots_.release();
    return false;
  }
  *v = run_in_section(run);
  rerun_shared_error_alone(run, &exclusive, v);
  confirm_if_needed(run, v);
  exclusive ? slots_.release_all() : slots_.release();
  trace::interval("gate", slot_ns, monotonic_ns(), run.name);
  settle_scope(*v, run.scoped_in, run.scoped_out);
  record_time(run, v);
  std::lock_guard<std::mutex> lock(report_mu_);
  if (!run.note.empty()) base_.sandbox_note = run.note;
  return true;
}

// A CUDA gate's GPU gate slot (gpu_slots.h), for one run of the gate: taken only once the gate
// holds its own slot here, and let go before it waits for any other, so that no two gates can
// each hold what the other waits for. Nothing when the cap is off or the kernel is on the CPU
// (a fake device's CPU children take them as CUDA children do, for tests).
std::unique_ptr<GpuSlot> GateRunner::gpu_gate_slot(const std::string& gate) const {
  const SandboxOptions& o = base_.launcher.options();
  if (o.gpu_gate_slots <= 0) return nullptr;
  const std::string lock = gpu_turn_lock_for(o, cuda_);
  if (lock.empty()) return nullptr;
  return take_gpu_gate_slot(lock, o.gpu_gate_slots, gate_start_rank(gate));
}

// One run of the whole gate inside the audit lane's gate section (left on every way out, a
// harness exception included).
GateVerdict GateRunner::run_in_section(GateRun& run) {
  const CurrentGateSlot gpu_slot(gpu_gate_slot(run.name));  // an overrunning child gives it up
  struct Section {
    const std::function<void(bool)>& hook;
    explicit Section(const std::function<void(bool)>& h) : hook(h) { if (hook) hook(true); }
    ~Section() { if (hook) hook(false); }
  } section(options_.gate_section);
  GateContext ctx = copy_of_base();
  ctx.cuda_hardware_queues = gate_hardware_queues(run.name);
  ctx.earlier_failures = run.earlier_failures;
  ctx.scopes = std::make_shared<GateContext::Scopes>();
  GateVerdict r = run.gate->run(ctx);
  run.time = ctx.timing;
  run.scoped_in = ctx.scopes->in, run.scoped_out = ctx.scopes->out;
  run.note = ctx.sandbox_note;
  return r;
}

// A timeout or an out-of-memory among gates sharing the machine may be the neighbours' doing,
// never the kernel's: such an error is only reported once it recurs alone. Once one has recurred
// alone, the kernel has shown it, and its later ones stand without a rerun (a kernel that hangs
// would otherwise cost every gate its timeout twice).
void GateRunner::rerun_shared_error_alone(GateRun& run, bool* exclusive, GateVerdict* v) {
  const bool shared_error = !*exclusive && slots_.total() > 1 && v->status == Status::Error &&
                            (v->category == Category::Timeout || v->category == Category::OutOfMemory);
  std::atomic<bool>& shown = v->category == Category::Timeout ? hang_shown_alone_ : oom_shown_alone_;
  if (shared_error && !shown) {
    slots_.release();
    slots_.acquire_all();
    *exclusive = true;
    if (!shown) {
      const Category first = v->category;
      *v = run_in_section(run);
      v->evidence["rerun_alone"] = true;
      if (v->status == Status::Error && v->category == first) shown = true;
    }
  }
  if (shared_error && !v->evidence.contains("rerun_alone"))
    v->evidence["rerun_alone"] = "not rerun: an earlier gate's error of this kind recurred alone";
}

// A crash, timeout or protocol violation is the kernel's only once its deciding case fails again
// in a fresh child (SPEC "Seeds and replay"); otherwise it is a harness error. A timeout that
// already recurred alone is confirmed, and once one has, the kernel has shown it: later ones stand
// (a hanging kernel must not pay every timeout twice).
void GateRunner::confirm_if_needed(GateRun& run, GateVerdict* v) {
  const bool recurred_alone = v->evidence.value("rerun_alone", nlohmann::json()) == true;
  if (needs_confirmation(*v) && !recurred_alone && !(v->category == Category::Timeout && hang_shown_alone_)) {
    Case decider;
    const bool has_case = deciding_case(*v, &decider);
    *v = confirm_failure(*v, [&] {
      if (!has_case) return run_in_section(run);  // no recorded case: the whole gate, once more
      const CurrentGateSlot gpu_slot(gpu_gate_slot(run.name));
      GateContext ctx = copy_of_base();
      ctx.cuda_hardware_queues = gate_hardware_queues(run.name);
      return run.gate->check_one(ctx, decider);
    });
    if (v->category == Category::Timeout) hang_shown_alone_ = true;
  } else if (needs_confirmation(*v)) {
    v->evidence["confirmed"] = recurred_alone ? "recurred when the gate ran again alone" : "an earlier timeout of this kernel recurred";
  }
}

void GateRunner::record_time(const GateRun& run, GateVerdict* v) const {
  const GateContext::Timing& time = run.time;
  if (time.children == 0) return;
  v->evidence["time"] = {{"children", time.children}, {"spawn_seconds", time.spawn},
                         {"spawn_lock_seconds", time.spawn_lock}, {"spawn_zygote_start_seconds", time.spawn_zygote_start},
                         {"spawn_zygote_seconds", time.spawn_zygote},
                         {"spawn_clone_seconds", time.spawn_clone},
                         {"child_context_seconds", time.child_context},
                         {"child_before_context_seconds", time.child_before_context},
                         {"inputs_seconds", time.inputs}, {"oracle_seconds", time.oracle},
                         {"kernel_seconds", time.kernel},
                         {"worker_round_trip_seconds", time.call}};
  // Each CUDA child's hardware queues (0: the driver's default), for the context floor.
  if (cuda_) v->evidence["time"]["hardware_queues"] = gate_hardware_queues(run.name);
}

}  // namespace gauntlet
