// Helpers every gate uses: opening a child, running a case beside the oracle, replay files, verdicts.
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <future>

#include "gauntlet/build/build_cache.h"
#include "gauntlet/cases/replay_sources.h"
#include "gauntlet/common/atomic_file.h"
#include "gauntlet/build/builder.h"
#include "gauntlet/cases/contract_scope.h"
#include "gauntlet/cases/diagnosis.h"
#include "gauntlet/cases/gate.h"
#include "gauntlet/cases/output_matching.h"
#include "gauntlet/common/rng.h"
#include "gauntlet/version.h"

namespace gauntlet {

uint64_t GateContext::case_seed(const std::string& gate, uint64_t case_index) const {
  return rng::derive_seed(master_seed, kernel_hash, gate, case_index);
}

GateVerdict Gate::check_one(GateContext&, const Case&) {
  GateVerdict v;
  v.name = name();
  v.status = Status::HarnessError;
  v.category = Category::HarnessError;
  v.message = "gate " + name() + " cannot replay single cases";
  return v;
}

Status status_for(Outcome::Kind kind) {
  switch (kind) {
    case Outcome::Kind::Ok: return Status::Pass;
    case Outcome::Kind::HarnessError: return Status::HarnessError;
    default: return Status::Error;
  }
}

void set_load_device(const GateContext& ctx, wire::LoadRequest* request) {
  request->device = ctx.manifest.device;
  if (request->device == "cuda") request->hardware_queues = ctx.cuda_hardware_queues;  // CPU bytes unchanged
}

std::unique_ptr<WorkerSession> open_session(GateContext& ctx, const std::string& gate, GateVerdict* failed,
                                            const std::string& entry) {
  wire::LoadRequest request;
  request.entry = entry;
  return open_session_with(ctx, gate, failed, request);
}

// A CUDA child's own start phases (device_info's "startup_seconds", worker/startup_phases.h).
void add_child_startup(const std::string& device_info, GateContext::Timing* timing) {
  if (device_info.empty()) return;
  const nlohmann::json info = nlohmann::json::parse(device_info, nullptr, /*allow_exceptions=*/false);
  if (!info.is_object() || !info.contains("startup_seconds") || !info["startup_seconds"].is_object()) return;
  const nlohmann::json& p = info["startup_seconds"];
  auto seconds = [&](const char* key) { return p.contains(key) && p[key].is_number() ? std::max(0.0, p[key].get<double>()) : 0.0; };
  timing->child_context += seconds("context");
  timing->child_before_context += seconds("before_serve") + seconds("sandbox") + seconds("dlopen") + seconds("cuda_init");
}

std::unique_ptr<WorkerSession> open_session_with(GateContext& ctx, const std::string& gate, GateVerdict* failed,
                                                 wire::LoadRequest request) {
  if (request.so_path.empty()) request.so_path = ctx.so_path;
  if (request.entry.empty()) request.entry = ctx.manifest.entry;
  if (is_python_module(ctx.manifest)) {
    request.entry = python_load_entry(ctx.manifest, request.entry);
    request.build_dir = ctx.manifest.module_build_dir;
  }
  set_load_device(ctx, &request);
  const int64_t t0 = wire::now_ms();
  struct AddSpawn {
    GateContext& ctx;
    int64_t t0;
    ~AddSpawn() { ctx.timing.spawn += double(wire::now_ms() - t0) / 1000.0; ++ctx.timing.children; }
  } add{ctx, t0};
  std::string error;
  std::unique_ptr<WorkerSession> s = ctx.launcher.spawn(&error);
  failed->name = gate;
  if (!s) {
    failed->status = Status::HarnessError;
    failed->category = Category::HarnessError;
    failed->message = "cannot start a sandboxed worker: " + error;
    return nullptr;
  }
  ctx.sandbox_note = ctx.launcher.isolation_note();
  ctx.timing.spawn_lock += s->spawn_times().lock_wait;
  ctx.timing.spawn_zygote_start += s->spawn_times().zygote_start;
  ctx.timing.spawn_zygote += s->spawn_times().zygote;
  ctx.timing.spawn_clone += s->spawn_times().clone;
  Outcome o = s->load(request);
  if (o.kind != Outcome::Kind::Ok) {
    failed->status = status_for(o.kind);
    failed->category = o.category;
    failed->message = "loading the kernel: " + o.message;
    return nullptr;
  }
  if (!s->sandbox_notes().empty()) ctx.sandbox_note += "; " + s->sandbox_notes();
  add_child_startup(s->device_info(), &ctx.timing);
  return s;
}

CaseRun run_case(GateContext& ctx, WorkerSession& session, const Case& c, uint32_t repeat) {
  CaseRun run;
  run.c = c;
  note_case_scope(ctx, c);
  const auto t0 = std::chrono::steady_clock::now();
  run.inputs = materialize_all(c);
  // The oracle computes while the candidate's child has the case: at a problem's own sizes each
  // takes seconds (a float64 reference on the CPU; the case's trip through the pipe and the GPU),
  // and neither needs the other until judging. Both only read the inputs.
  double oracle_seconds = 0;
  std::future<OracleResult> oracle = std::async(std::launch::async, [&] {
    const auto o0 = std::chrono::steady_clock::now();
    OracleResult r = run_oracle(ctx.schema.oracle, run.inputs, c.attrs);
    oracle_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - o0).count();
    return r;
  });
  const auto t1 = std::chrono::steady_clock::now();
  wire::CaseRequest req;
  req.case_id = c.index;
  req.args = make_args(ctx.schema, run.inputs, c.attrs);
  req.repeat = repeat;
  Outcome outcome = session.call(req);
  ctx.timing.call += std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  ctx.timing.kernel += outcome.reply.kernel_seconds;
  run.oracle = oracle.get();
  ctx.timing.inputs += std::chrono::duration<double>(t1 - t0).count();
  ctx.timing.oracle += oracle_seconds;
  if (!run.oracle.ok()) {
    // The generator made a case the oracle rejects: gauntlet's fault, never the kernel's (whatever
    // the candidate did with it).
    run.outcome.kind = Outcome::Kind::HarnessError;
    run.outcome.category = Category::HarnessError;
    run.outcome.message = "the oracle rejected a generated case (" + c.label + "): " + run.oracle.error;
    return run;
  }
  run.outcome = std::move(outcome);
  run.unmatched = match_to_oracle(ctx, run.inputs, c.attrs, run.oracle.outputs, run.outcome);
  return run;
}

std::string match_to_oracle(const GateContext& ctx, const std::vector<at::Tensor>& inputs, const AttrMap& attrs,
                            const std::vector<at::Tensor>& oracle_outputs, Outcome& outcome) {
  if (outcome.kind != Outcome::Kind::Ok || !has_output_freedom(ctx.schema)) return "";
  std::string first_mismatch;
  for (wire::CallOutputs& call : outcome.reply.calls) {
    const std::string why = match_call_to_oracle(ctx, inputs, attrs, oracle_outputs, &call.outputs);
    if (first_mismatch.empty()) first_mismatch = why;
  }
  return first_mismatch;
}

std::string match_call_to_oracle(const GateContext& ctx, const std::vector<at::Tensor>& inputs, const AttrMap& attrs,
                                 const std::vector<at::Tensor>& oracle_outputs, std::vector<at::Tensor>* outputs) {
  if (!has_output_freedom(ctx.schema)) return "";
  OutputMatch m = match_outputs(ctx.schema, attrs, inputs, *outputs, oracle_outputs);
  if (!m.ok) return m.message;
  *outputs = std::move(m.outputs);
  return "";
}

GateVerdict verdict_from_outcome(const GateContext& ctx, const std::string& gate, const CaseRun& run) {
  GateVerdict v;
  v.name = gate;
  const std::string outside = outside_contract_reason(ctx.manifest, run.c);
  if (run.outcome.kind == Outcome::Kind::KernelError && !outside.empty()) {
    // Outside its contract a kernel may refuse: a clean error is the right answer there.
    v.scope = kOutOfContract;
    v.message = "case " + run.c.label + ": refused an input outside its contract (" + outside + "): " + run.outcome.message;
    v.evidence["refused_outside_contract"] = true;
    return v;
  }
  v.status = status_for(run.outcome.kind);
  v.category = run.outcome.category;
  v.message = "case " + run.c.label + ": " + run.outcome.message;
  if (v.status != Status::HarnessError) v.scope = outside.empty() ? kInContract : kOutOfContract;
  if (!outside.empty() && v.status != Status::HarnessError) v.message += " (an input outside the contract: " + outside + ")";
  return v;
}

void note_outputs(GateVerdict& v, const CaseRun& run) {
  if (run.outcome.kind == Outcome::Kind::Ok && !run.outcome.reply.calls.empty())
    v.outputs_sha256 = inputs_digest(run.outcome.reply.calls[0].outputs);
}

std::string write_replay(GateContext& ctx, const std::string& gate, const CaseRun& run, GateVerdict& v) {
  if (v.status == Status::Pass || v.status == Status::Skip) return "";
  // The failure's scope is its case's: decided here, where every failure meets its case.
  const std::string outside = outside_contract_reason(ctx.manifest, run.c);
  if (v.scope.empty() && v.status != Status::HarnessError) v.scope = outside.empty() ? kInContract : kOutOfContract;
  // The deciding case's size: the root cause (root_cause.h) leads with the smallest failing case.
  int64_t elements = 0;
  for (const at::Tensor& t : run.inputs) elements += t.defined() ? t.numel() : 0;
  v.evidence["deciding_case"] = {{"label", run.c.label}, {"elements", elements}};
  // A wrong output that a known bug explains is named (diagnosis.h), in the evidence the verify
  // table, the report and the replay file show.
  if (v.category == Category::WrongResult && run.outcome.kind == Outcome::Kind::Ok && !run.outcome.reply.calls.empty() &&
      !v.evidence.contains("diagnosis")) {
    if (auto d = diagnose_wrong_output(ctx.schema, run.c, run.inputs, run.outcome.reply.calls[0].outputs, run.oracle.outputs))
      v.evidence["diagnosis"] = {{"name", d->name}, {"text", d->text}};
  }
  // Why the outputs could not be put in the oracle's order: the judge's first differing element
  // alone would not say that an index points at a smaller value, or a row is missing.
  if (!run.unmatched.empty() && v.message.find(run.unmatched) == std::string::npos)
    v.message += " (output matching: " + run.unmatched + ")";
  // Said once in the message, where the gate has not said it (verdict_from_outcome does).
  if (!outside.empty() && v.status != Status::HarnessError && v.message.find(outside) == std::string::npos)
    v.message += " (an input outside the contract: " + outside + ")";
  if (ctx.replay_dir.empty()) return "";
  // Create the whole path (the default gauntlet-out/replays usually does not exist yet).
  if (!build_internal::make_dirs(ctx.replay_dir, nullptr)) return "";
  nlohmann::json j;
  j["format"] = "gauntlet-replay-v1";
  j["tool_version"] = GAUNTLET_VERSION_STRING;
  j["op"] = ctx.schema.name;
  j["schema_sha256"] = ctx.schema_hash;
  j["kernel"] = {{"source", ctx.manifest.source},
                 {"sha256", ctx.kernel_hash},
                 {"entry", ctx.manifest.entry},
                 {"backward", ctx.manifest.backward_entry},
                 {"device", ctx.manifest.device},
                 {"manifest", ctx.manifest.manifest_path}};
  j["gate"] = gate;
  j["master_seed"] = ctx.master_seed;
  j["case"] = case_to_json(run.c);
  j["inputs_sha256"] = inputs_digest(run.inputs);
  j["verdict"] = {{"status", status_name(v.status)}, {"category", category_name(v.category)}, {"message", v.message}};
  if (!v.scope.empty()) j["verdict"]["scope"] = v.scope;
  if (v.evidence.contains("diagnosis")) j["verdict"]["diagnosis"] = v.evidence["diagnosis"];
  if (!outside.empty()) j["outside_contract"] = outside;
  if (!v.outputs_sha256.empty()) j["outputs_sha256"] = v.outputs_sha256;
  // The bytes themselves, so the file replays where the recorded paths do not exist.
  j["sources"] = replay_sources::embed(ctx.manifest, ctx.kernel_hash);
  const std::string path =
      ctx.replay_dir + "/" + ctx.schema.name + "-" + ctx.kernel_hash.substr(0, 12) + "-" + gate + ".json";
  return write_file_atomic(path, j.dump(2) + "\n") ? path : "";
}

DType expected_output_dtype(const OpSchema& schema, size_t i, const Case& c) {
  const std::string rule = i < schema.outputs.size() ? schema.outputs[i].dtype : "same:" + schema.inputs[0].name;
  if (rule.rfind("same:", 0) == 0) {
    const std::string input = rule.substr(5);
    for (const TensorRecipe& r : c.tensors)
      if (r.name == input) return r.dtype;
  }
  auto d = dtype_from_name(rule);
  return d ? *d : case_dtype(schema, c);
}

std::optional<int64_t> eval_case_expr(const std::string& expr, const Case& c) {
  std::map<std::string, int64_t> vars = c.dims;
  for (const auto& [k, v] : c.attrs) {
    if (std::holds_alternative<int64_t>(v)) vars[k] = std::get<int64_t>(v);
    else if (std::holds_alternative<bool>(v)) vars[k] = std::get<bool>(v);
  }
  vars["elem_size"] = c.tensors.empty() ? 4 : dtype_size(c.tensors[0].dtype);
  ShapeMap shapes;
  for (const TensorRecipe& r : c.tensors) shapes[r.name] = r.shape;
  std::string error;
  return eval_expr(expr, vars, shapes, &error);
}

int64_t reduction_terms(const OpSchema& schema, const Case& c) {
  if (!schema.reduction || schema.reduction->K.empty()) return 1;
  auto k = eval_case_expr(schema.reduction->K, c);
  return k && *k > 0 ? *k : 1;
}

}  // namespace gauntlet
