// The worker's serve loop: load the kernel inside the sandbox, run each case, return raw outputs.
#include <dlfcn.h>
#include <unistd.h>

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "gauntlet/kernel_abi.h"
#include "gauntlet/common/monotonic_clock.h"
#include "gauntlet/common/wire.h"
#include "case_transfers.h"
#include "device_poison.h"
#include "guarded_alloc.h"
#include "kernel_preload.h"
#include "startup_phases.h"
#include "tensor_storage.h"
#include "timing_loop.h"
#include "cuda_rt.h"
#include "worker.h"

namespace gauntlet::worker {
namespace {

constexpr int32_t kWorkerInternalError = 100;

// Records the name of every ATen operator entered while `active` (provenance gate). A global
// callback, not a thread-local one: operators a kernel runs inside at::parallel_for workers count.
struct OperatorRecorder {
  std::mutex mu;
  bool active = false;
  std::vector<std::string> names;  // first-seen order, each once
  void note(const char* name) {
    std::lock_guard<std::mutex> lock(mu);
    if (!active) return;
    for (const std::string& n : names)
      if (n == name) return;
    names.emplace_back(name);
  }
  void set_active(bool on) {
    std::lock_guard<std::mutex> lock(mu);
    active = on;
  }
  std::vector<std::string> take() {
    std::lock_guard<std::mutex> lock(mu);
    return std::move(names);
  }
  // device=cuda: device-to-host transfers while active, the source matched against `inputs`.
  std::vector<at::Tensor> inputs;
  std::vector<wire::HostCopy> copies;
  void note_copy(const char* op, const at::Tensor& src) {
    std::lock_guard<std::mutex> lock(mu);
    if (!active || copies.size() >= 64) return;
    wire::HostCopy h;
    h.op = op;
    for (size_t j = 0; j < inputs.size() && h.input < 0; ++j)
      if (overlaps(src, inputs[j])) h.input = int32_t(j);
    h.from = src.device().str();
    h.bytes = int64_t(src.numel()) * int64_t(src.element_size());
    copies.push_back(std::move(h));
  }
};
OperatorRecorder g_ops;

// A device-to-host transfer through ATen: copy_ into a CPU tensor from a CUDA one (.cpu(), .to(),
// copy_ itself), or _local_scalar_dense of a CUDA tensor (.item()). Leaf operators only, so one
// .cpu() is one transfer, not three (aten::to, aten::_to_copy, aten::copy_).
void note_host_copy(const at::RecordFunction& fn) {
  const char* name = fn.name();
  const bool copy = std::strcmp(name, "aten::copy_") == 0;
  if (!copy && std::strcmp(name, "aten::_local_scalar_dense") != 0) return;
  const auto in = fn.inputs();
  if (copy) {
    if (in.size() < 2 || !in[0].isTensor() || !in[1].isTensor()) return;
    const at::Tensor& dst = in[0].toTensor();
    const at::Tensor& src = in[1].toTensor();
    if (dst.defined() && src.defined() && dst.is_cpu() && src.is_cuda()) g_ops.note_copy(name, src);
  } else if (!in.empty() && in[0].isTensor() && in[0].toTensor().defined() && in[0].toTensor().is_cuda()) {
    g_ops.note_copy(name, in[0].toTensor());
  }
}
bool g_record_ops = false;
bool g_cuda = false;  // the kernel's device is cuda: inputs go to the GPU, outputs come back
uint8_t g_poison = 0xA5;  // LoadRequest.poison_byte: also written over the CUDA cache before each call

// ---- device=cuda: inputs to the GPU, outputs back (the parent never touches CUDA) ------------------

// Waits for the current CUDA stream and then the whole device (a kernel may launch on a stream of
// its own, and its outputs must be complete before they are read); a CUDA error the kernel left
// behind (launch failure, illegal address) throws.
void synchronize_cuda() {
  std::string error;
  // The whole device covers the current stream, as cpp_extension kernels use: one wait, not two
  // (beside a kernel past its turn's bound every wait can cost a time slice, docs/gpu.md).
  if (cuda_rt::available()) {
    if (!cuda_rt::device_synchronize(&error)) throw std::runtime_error(error);
    return;
  }
  c10::impl::VirtualGuardImpl guard(c10::DeviceType::CUDA);
  guard.getStream(guard.getDevice()).synchronize();
}

// Torch's lazy CUDA start (its CUDA state, the caching allocator) and a first copy each way, done
// while loading: the parent gives a child its GPU turn per request (gpu_turn.h), so what every
// child pays once overlaps other children's work instead of holding the GPU. Errors are left to
// the first case, where they are categorized.
void warm_up_cuda(int64_t* context_made_ns) {
  try {
    at::Tensor device = at::zeros({256}, at::kFloat).to(at::kCUDA);
    at::Tensor back = device.cpu();
    *context_made_ns = monotonic_ns();
    // The first poisoning too: it reserves the cache's first segments and loads the byte fill's
    // module (lazy module loading), work every case's turn would otherwise start with.
    poison_cuda_cache(g_poison, 0, 0);
    synchronize_cuda();
  } catch (const std::exception&) {
  }
}

// With `host_copies` (device=cuda) the callback also gets each operator's inputs, to see transfers.
void install_operator_recorder(bool host_copies) {
  at::addGlobalCallback(at::RecordFunctionCallback(
                            host_copies ? +[](const at::RecordFunction& fn) -> std::unique_ptr<at::ObserverContext> {
                              g_ops.note(fn.name());
                              note_host_copy(fn);
                              return nullptr;
                            } : +[](const at::RecordFunction& fn) -> std::unique_ptr<at::ObserverContext> {
                              g_ops.note(fn.name());
                              return nullptr;
                            })
                            .needsInputs(host_copies)
                            .scopes({at::RecordScope::FUNCTION}));
}

bool reply(wire::FrameType t, const std::string& payload) { return wire::write_frame(kReplyFd, t, payload); }

// Asks the parent for the GPU turn and waits for it (frames TurnRequest, TurnGrant; wire.h).
bool take_turn() {
  if (!reply(wire::FrameType::TurnRequest, "")) return false;
  wire::Frame grant;
  std::string why;
  return wire::read_frame(kRequestFd, &grant, -1, &why) == wire::ReadStatus::Ok &&
         grant.type == wire::FrameType::TurnGrant;
}

std::string g_device_info;  // device=cuda: describe_cuda_device(), sent with the LoadReply

bool send_load_reply(bool ok, const std::string& error, const std::string& sig, const std::string& notes) {
  wire::LoadReply r;
  r.device_info = g_device_info;
  r.ok = ok;
  r.error = error;
  r.signature = sig;
  r.sandbox_notes = notes;
  return reply(wire::FrameType::LoadReply, wire::encode(r));
}

// The case's tensor arguments, in argument order (undefined ones included).
std::vector<at::Tensor> case_tensor_inputs(const wire::CaseRequest& req) {
  std::vector<at::Tensor> inputs;
  for (const wire::Arg& a : req.args)
    if (a.kind == wire::Arg::Kind::Tensor) inputs.push_back(a.tensor);
  return inputs;
}

// Before a CUDA case's GPU turn: what needs the driver but not the GPU (the poison blocks' device
// memory, device_poison.h) and host work (the inputs' bytes into the page-locked staging buffer,
// case_transfers.h). An earlier failed case's inputs are released first, so the cache can be.
StagedInputs prepare_cuda_case(const wire::CaseRequest& req) {
  {
    std::lock_guard<std::mutex> lock(g_ops.mu);
    g_ops.inputs.clear();
  }
  const CaseBytes bytes = case_input_bytes(req);
  try {
    reserve_poison_blocks(bytes.input, bytes.largest_input);
    return stage_inputs(case_tensor_inputs(req));
  } catch (const std::exception&) {
    // Left to the case in its turn, where an error is reported.
  }
  return {};
}

using PhaseClock = std::chrono::steady_clock;

double seconds_since(PhaseClock::time_point t) { return std::chrono::duration<double>(PhaseClock::now() - t).count(); }

// device=cuda: the device copies of the inputs and the kernel's allocations come from poisoned memory.
void poison_before_call(const CaseBytes& bytes, wire::CaseReply* rep) {
  const auto p0 = PhaseClock::now();
  const double released_before = poison_release_seconds_total();
  poison_cuda_cache(g_poison, bytes.input, bytes.largest_input);
  rep->poison_seconds += seconds_since(p0);
  rep->poison_release_seconds += poison_release_seconds_total() - released_before;
}

// The case's arguments as the entry takes them (device=cuda: tensors copied to the GPU), its tensor
// inputs among them, and what each input started from: the CPU bytes (device=cpu, where the entry
// gets the tensors themselves) or the request's CPU tensors (device=cuda, never handed to the entry).
struct CaseArgs {
  std::vector<KernelArg> args;
  std::vector<at::Tensor> inputs;
  std::vector<std::string> before;
  std::vector<at::Tensor> host_inputs;
  double outside_turn_seconds = 0;  // between repeat calls, with the GPU turn given back
};

CaseArgs make_case_args(const wire::CaseRequest& req, const StagedInputs& staged) {
  CaseArgs c;
  c.args.resize(req.args.size());
  std::vector<at::Tensor>& host_inputs = c.host_inputs;
  for (size_t i = 0; i < req.args.size(); ++i) {
    const wire::Arg& a = req.args[i];
    KernelArg& k = c.args[i];
    k.kind = KernelArg::Kind(uint8_t(a.kind));
    k.tensor = a.tensor;
    k.i = a.i;
    k.d = a.d;
    k.b = a.b;
    if (a.kind == wire::Arg::Kind::Tensor) {
      host_inputs.push_back(a.tensor);
      if (!g_cuda) c.before.push_back(storage_bytes(a.tensor));
    }
  }
  // device=cuda: the tensors go to the GPU together, staged before the turn (case_transfers.h).
  std::vector<at::Tensor> device_inputs;
  if (g_cuda) device_inputs = to_cuda_same_layout_all(staged.ready ? staged : stage_inputs(host_inputs));
  size_t j = 0;
  for (size_t i = 0; i < req.args.size(); ++i) {
    if (req.args[i].kind != wire::Arg::Kind::Tensor) continue;
    if (g_cuda && req.args[i].tensor.defined()) c.args[i].tensor = device_inputs[j];
    c.inputs.push_back(c.args[i].tensor);
    ++j;
  }
  return c;
}

// The case's memory-gate and operator records start empty.
void begin_case_records(const std::vector<at::Tensor>& inputs) {
  begin_case();  // memory gate: canary breaches are reported per case
  if (g_record_ops) g_ops.take();  // nothing of an earlier failed case carries over
  if (g_record_ops && g_cuda) {
    std::lock_guard<std::mutex> lock(g_ops.mu);
    g_ops.copies.clear();
    g_ops.inputs = inputs;  // host copies are matched against the inputs' device storage
  }
}

// One call of the entry, operators recorded while it runs; device=cuda: its GPU work complete
// (asynchronous kernel errors surface as a failed call). *seconds gains the call's time.
int invoke_entry(const KernelEntry& entry, std::vector<KernelArg>* args, std::vector<at::Tensor>* outs,
                 std::string* error, double* seconds) {
  auto t0 = std::chrono::steady_clock::now();
  if (g_record_ops) g_ops.set_active(true);
  int code = entry.invoke(args, outs, error);
  if (g_cuda && code == kCallOk) {
    try {
      synchronize_cuda();  // asynchronous kernel errors surface here, and the time covers the GPU work
    } catch (const std::exception& e) {
      code = kCallException;
      *error = std::string("CUDA error after the call: ") + e.what();
    }
  }
  if (g_record_ops) g_ops.set_active(false);
  *seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return code;
}

// The first storage in `among` that `t` shares bytes with; -1 for none.
int32_t first_overlap(const at::Tensor& t, const std::vector<at::Tensor>& among, size_t count) {
  int32_t found = -1;
  for (size_t j = 0; j < count && found < 0; ++j)
    if (overlaps(t, among[j])) found = int32_t(j);
  return found;
}

// A call's outputs as the parent gets them: where each lives, what it aliases (an input, an earlier
// output, an output of the previous call), its layout, and a host copy. False with the reply's code
// and message set when the entry returned an undefined tensor. With `inputs_after` (device=cuda,
// the case's last call) the inputs' storages are read back in the same batch as the outputs.
bool collect_call_outputs(const std::vector<at::Tensor>& outs, const std::vector<at::Tensor>& inputs,
                          const std::vector<at::Tensor>& previous, wire::CallOutputs* co, wire::CaseReply* rep,
                          std::vector<std::string>* inputs_after) {
  HostBatch batch;
  for (size_t i = 0; i < outs.size(); ++i) {
    const at::Tensor& t = outs[i];
    if (!t.defined()) {
      rep->code = kCallException;
      rep->message = "entry returned an undefined tensor as output " + std::to_string(i);
      return false;
    }
    co->devices.push_back(t.device().str());
    co->alias_input.push_back(first_overlap(t, inputs, inputs.size()));
    co->alias_output.push_back(first_overlap(t, outs, i));
    co->output_contiguous.push_back(t.is_contiguous());
    co->alias_previous_call.push_back(first_overlap(t, previous, previous.size()));
    // Copy now: a later call may reuse (and overwrite) the same buffer.
    if (g_cuda) batch.add_values(t);
    else co->outputs.push_back(t.cpu().contiguous().clone());
  }
  if (!g_cuda) return true;
  const auto h0 = PhaseClock::now();
  std::vector<size_t> input_slots;
  if (inputs_after)
    for (const at::Tensor& t : inputs) input_slots.push_back(batch.add_storage(t));
  batch.wait();
  for (size_t i = 0; i < outs.size(); ++i) co->outputs.push_back(batch.values(i));
  if (inputs_after)
    for (size_t slot : input_slots) inputs_after->push_back(batch.storage(slot));
  rep->from_device_seconds += seconds_since(h0);
  return true;
}

// The parent did not grant a turn asked for within a case: it is gone or out of step.
struct TurnLost : std::runtime_error {
  TurnLost() : std::runtime_error("the parent did not grant the GPU turn") {}
};

// Between repeat calls (determinism, statelessness) the turn is given back and asked for again.
// device=cuda: meanwhile the poison blocks are made the whole cache again. The previous call's
// outputs are alive, so the blocks are seldom the whole cache any more, and making them so releases
// the cache and allocates afresh: driver calls that wait while other processes create contexts
// (tens of ms on the H200 under load), which need no turn. A CPU child is granted at once, so every
// repeated case on the CPU exercises the exchange.
void give_turn_back_between_calls(const CaseBytes& bytes, double* outside_turn_seconds) {
  const auto t0 = PhaseClock::now();
  if (!reply(wire::FrameType::TurnRelease, "")) throw TurnLost();
  if (g_cuda) {
    try {
      reserve_poison_blocks(bytes.input, bytes.largest_input);
    } catch (const std::exception&) {
      // Left to the poisoning in the turn.
    }
  }
  if (!take_turn()) throw TurnLost();
  *outside_turn_seconds += seconds_since(t0);
}

// The case's calls (CaseRequest::repeat, at least one). False with the reply's code and message set
// (and no calls) when one fails; *seconds: the calls' time. *previous holds the last call's outputs;
// device=cuda: *inputs_after the inputs' storage bytes after the last call.
bool run_calls(const KernelEntry& entry, const wire::CaseRequest& req, const CaseBytes& bytes, CaseArgs* c,
               std::vector<at::Tensor>* previous, wire::CaseReply* rep, double* seconds,
               std::vector<std::string>* inputs_after) {
  const uint32_t calls = std::max<uint32_t>(1, req.repeat);
  for (uint32_t call = 0; call < calls; ++call) {
    std::vector<at::Tensor> outs;
    std::string error;
    if (call > 0 && req.turn_handshake) give_turn_back_between_calls(bytes, &c->outside_turn_seconds);
    if (g_cuda && call > 0) poison_before_call(bytes, rep);  // and before each repeat
    const int code = invoke_entry(entry, &c->args, &outs, &error, seconds);
    if (code != kCallOk) {
      rep->code = code;
      rep->message = error;
      rep->calls.clear();
      return false;
    }
    wire::CallOutputs co;
    if (!collect_call_outputs(outs, c->inputs, *previous, &co, rep,
                              g_cuda && call + 1 == calls ? inputs_after : nullptr)) {
      rep->calls.clear();
      return false;
    }
    rep->calls.push_back(std::move(co));
    if (guards_enabled() && !g_cuda)  // while this call's outputs are alive, so breaches name them
      for (const wire::MemoryFinding& f : check_guards(c->inputs, outs)) rep->memory_findings.push_back(f);
    *previous = std::move(outs);
  }
  return true;
}

// A CPU tensor with `t`'s sizes, strides and offset over `bytes`, the whole storage read back.
at::Tensor mirror_of(const at::Tensor& t, const std::string& bytes) {
  at::Tensor m = at::empty({int64_t(bytes.size())}, at::TensorOptions().dtype(at::kByte));
  if (!bytes.empty()) std::memcpy(m.data_ptr(), bytes.data(), bytes.size());
  at::Tensor v = at::empty({0}, t.options().device(at::kCPU));
  v.set_(m.storage(), t.storage_offset(), t.sizes(), t.strides());
  return v;
}

// Whether the calls left every input's storage as it was; findings say where one changed.
// device=cuda: `after` holds the storages as read back with the last call's outputs.
void check_inputs_unchanged(const CaseArgs& c, const std::vector<std::string>& after, wire::CaseReply* rep) {
  const auto c0 = PhaseClock::now();
  for (size_t j = 0; j < c.inputs.size(); ++j)
    if (g_cuda ? !same_storage_bytes(c.host_inputs[j], after[j]) : storage_bytes(c.inputs[j]) != c.before[j])
      rep->inputs_unchanged = false;
  if (g_cuda) rep->check_seconds = seconds_since(c0);
  if (rep->inputs_unchanged) return;
  if (g_cuda) {  // the findings read storage bytes on the host: hand them CPU mirrors
    std::vector<at::Tensor> mirrors;
    std::vector<std::string> before;
    for (size_t j = 0; j < c.inputs.size(); ++j) {
      mirrors.push_back(mirror_of(c.inputs[j], after[j]));
      before.push_back(storage_bytes(c.host_inputs[j]));
    }
    note_modified_inputs(mirrors, before, &rep->memory_findings);
  } else {
    note_modified_inputs(c.inputs, c.before, &rep->memory_findings);
  }
}

// The operators and device-to-host copies recorded over the case's calls, into the reply.
void take_case_records(wire::CaseReply* rep) {
  if (g_record_ops) rep->aten_ops = g_ops.take();
  if (g_record_ops && g_cuda) {
    std::lock_guard<std::mutex> lock(g_ops.mu);
    rep->host_copies = std::move(g_ops.copies);
    g_ops.copies.clear();
    g_ops.inputs.clear();
  }
}

wire::CaseReply run_case_steps(const KernelEntry& entry, const wire::CaseRequest& req, const StagedInputs& staged,
                               double* outside_turn_seconds) {
  wire::CaseReply rep;
  rep.case_id = req.case_id;
  const CaseBytes bytes = case_input_bytes(req);
  rep.has_phases = g_cuda;
  if (g_cuda) {
    {
      std::lock_guard<std::mutex> lock(g_ops.mu);
      g_ops.inputs.clear();  // an earlier failed case's inputs: released before the cache is emptied
    }
    poison_before_call(bytes, &rep);
  }
  const auto d0 = PhaseClock::now();
  CaseArgs c = make_case_args(req, staged);
  if (g_cuda) rep.to_device_seconds = seconds_since(d0);
  double seconds = 0;
  begin_case_records(c.inputs);
  // The previous call's outputs stay alive until the next call has returned, so storage they share
  // with it was handed out again by the kernel, not recycled by the allocator.
  std::vector<at::Tensor> previous;
  std::vector<std::string> inputs_after;
  const bool ran = run_calls(entry, req, bytes, &c, &previous, &rep, &seconds, &inputs_after);
  *outside_turn_seconds = c.outside_turn_seconds;
  if (!ran) return rep;
  check_inputs_unchanged(c, inputs_after, &rep);
  rep.kernel_seconds = seconds;
  take_case_records(&rep);
  return rep;
}

// One case, with its whole time in the turn (CaseReply::case_seconds) beside its phases.
wire::CaseReply run_case(const KernelEntry& entry, const wire::CaseRequest& req, const StagedInputs& staged) {
  const auto t0 = std::chrono::steady_clock::now();
  double outside_turn = 0;
  wire::CaseReply rep = run_case_steps(entry, req, staged, &outside_turn);
  if (rep.has_phases)
    rep.case_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() - outside_turn;
  return rep;
}

// The timing gate's frames: a TimeRequest (timed calls) or a Peaks request (device peaks).
bool serve_timing(const KernelEntry& entry, const wire::Frame& f) {
  set_poisoning(false);  // the fill of fresh memory would be timed with the kernel
  if (f.type == wire::FrameType::Peaks)
    return reply(wire::FrameType::PeaksReply, wire::encode(measure_peaks(g_cuda)));
  wire::TimeRequest req;
  wire::TimeReply rep;
  std::string why;
  if (!wire::decode(f.payload, &req, &why)) {
    rep.code = kWorkerInternalError;
    rep.message = "worker could not decode the timing request: " + why;
  } else {
    // The turn covers the device work only: the sets arrived and the reply (verified outputs, tens
    // of megabytes at the timed shape) is encoded and written while another child has the GPU.
    if (req.turn_handshake && !take_turn()) return false;
    rep = run_timing(entry, req, g_cuda);
    if (req.turn_handshake && !reply(wire::FrameType::TurnRelease, "")) return false;
  }
  return reply(wire::FrameType::TimeReply, wire::encode(rep));
}

}  // namespace

int serve(const SandboxPolicy& policy) {
  const auto serve_start = PhaseClock::now();
  StartupPhases startup;  // device=cuda: where the child's start went (startup_phases.h)
  wire::Frame f;
  std::string why;
  if (wire::read_frame(kRequestFd, &f, -1, &why) != wire::ReadStatus::Ok || f.type != wire::FrameType::Load)
    return 3;
  startup.load_read_ns = monotonic_ns();
  startup.load_wait = seconds_since(serve_start);
  wire::LoadRequest load;
  if (!wire::decode(f.payload, &load, &why)) return (send_load_reply(false, "harness: " + why, "", ""), 3);

  std::string so_path = load.so_path, notes, error;
  g_cuda = load.device == "cuda";
  g_poison = load.poison_byte;
  // Read when the context is created (warm_up_cuda below, or the kernel's first CUDA call).
  if (g_cuda && load.hardware_queues > 0)
    setenv("CUDA_DEVICE_MAX_CONNECTIONS", std::to_string(load.hardware_queues).c_str(), 1);
  SandboxPolicy effective = policy;
  // The CUDA driver reserves large virtual ranges: an address-space/data limit breaks its start.
  // GPU memory is bounded by the device; a CUDA child's host memory is not limited yet (docs/gpu.md).
  if (g_cuda) effective.memory_limit_bytes = 0;
  // The process's age when serve began, read while /proc is still there; the Load frame's wait
  // since then is the parent's, not the start's.
  if (g_cuda) startup.before_serve = seconds_since_process_start() - seconds_since(serve_start);
  const auto sandbox_start = PhaseClock::now();
  if (!enter_sandbox(effective, &so_path, &notes, &error, g_cuda))
    return (send_load_reply(false, "harness: sandbox setup failed: " + error, "", ""), 3);
  startup.sandbox = seconds_since(sandbox_start);

  at::set_num_threads(std::max(1, load.intra_op_threads));
  // Fresh memory reads as the poison byte (unwritten outputs show); guarded when the memory gate asks.
  install_allocator(load.poison_byte, load.guard_bytes);
  g_record_ops = load.record_ops;
  if (g_record_ops) install_operator_recorder(g_cuda);

  const auto dlopen_start = PhaseClock::now();
  void* handle = dlopen(so_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) return (send_load_reply(false, std::string("dlopen failed: ") + dlerror(), "", notes), 4);
  startup.dlopen = seconds_since(dlopen_start);
  auto entries_fn = reinterpret_cast<GauntletEntriesFn>(dlsym(handle, GAUNTLET_ENTRIES_SYMBOL));
  if (!entries_fn)
    return (send_load_reply(false, "the shared object has no gauntlet entry table (not built by gauntlet?)", "", notes), 4);
  const KernelEntry* entry = nullptr;
  for (const KernelEntry* e = entries_fn(); e && e->name; ++e)
    if (load.entry == e->name) entry = e;
  if (!entry) return (send_load_reply(false, "entry '" + load.entry + "' not found in the kernel", "", notes), 4);
  if (g_cuda) {
    const auto init_start = PhaseClock::now();
    startup.init_ns = monotonic_ns();
    g_device_info = describe_cuda_device();
    startup.cuda_init = seconds_since(init_start);
    const auto context_start = PhaseClock::now();
    startup.context_ns = monotonic_ns();
    warm_up_cuda(&startup.context_made_ns);
    startup.warm_ns = monotonic_ns();
    startup.context = seconds_since(context_start);
    const PreloadResult preload = preload_kernel_functions(handle, so_path);
    startup.preload = preload.seconds, startup.preload_symbols = preload.symbols, startup.preload_kernels = preload.kernels;
    startup.ready_ns = monotonic_ns();  // the reply goes out next
    g_device_info = with_startup_phases(g_device_info, startup);
  }
  if (!send_load_reply(true, "", entry->signature, notes)) return 5;

  while (true) {
    wire::ReadStatus s = wire::read_frame(kRequestFd, &f, -1, &why);
    if (s != wire::ReadStatus::Ok || f.type == wire::FrameType::Bye) return 0;
    if (f.type == wire::FrameType::Time || f.type == wire::FrameType::Peaks) {
      if (!serve_timing(*entry, f)) return 5;
      continue;
    }
    if (f.type != wire::FrameType::Case) return 3;
    wire::CaseRequest req;
    wire::CaseReply rep;
    if (!wire::decode(f.payload, &req, &why)) {
      rep.code = kWorkerInternalError;
      rep.message = "worker could not decode the case: " + why;
    } else {
      // The GPU turn (CaseRequest::turn_handshake) covers the case's device work, from poisoning
      // to the outputs on the host: the pipe and the (de)serialization on either side of it run
      // while another child has the GPU. A parent that does not grant it is gone or out of step.
      const auto r0 = std::chrono::steady_clock::now();
      const DriverMemoryCalls calls_before = g_cuda ? driver_memory_calls() : DriverMemoryCalls{};
      StagedInputs staged;
      if (g_cuda) staged = prepare_cuda_case(req);
      const double reserve_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - r0).count();
      if (req.turn_handshake && !take_turn()) return 5;
      try {
        rep = run_case(*entry, req, staged);
        if (rep.has_phases) rep.reserve_seconds += reserve_seconds;
        if (const DriverMemoryCalls after = driver_memory_calls(); calls_before.allocs >= 0 && after.allocs >= 0)
          rep.driver_allocs = after.allocs - calls_before.allocs, rep.driver_frees = after.frees - calls_before.frees;
      } catch (const TurnLost&) {
        return 5;  // the parent is gone or out of step: nothing to reply to
      } catch (const std::exception& e) {
        rep = wire::CaseReply{};
        rep.case_id = req.case_id;
        rep.code = kWorkerInternalError;
        rep.message = std::string("worker error: ") + e.what();
      }
      if (req.turn_handshake && !reply(wire::FrameType::TurnRelease, "")) return 5;
    }
    if (!reply(wire::FrameType::CaseReply, wire::encode(rep))) return 5;
  }
}

}  // namespace gauntlet::worker
