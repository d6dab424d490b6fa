// The module oracle: a schema synthesized from an unmapped module's get_inputs(), whose oracle is
// the module's reference Model in float64, evaluated in a sandboxed Python child.
#include "gauntlet/oracle/module_oracle.h"

#include <ATen/Parallel.h>

#include <limits.h>
#include <stdlib.h>

#include <atomic>
#include <cmath>

#include <nlohmann/json.hpp>

#include "gauntlet/common/digest.h"
#include "gauntlet/common/numerics.h"

namespace gauntlet {
namespace {

constexpr const char* kOraclePrefix = "module:";
// Answers kept for repeated inputs (determinism, statelessness and layouts repeat cases): at most
// this many, and this many bytes of outputs and scales (a KernelBench problem's float64 answer can
// be gigabytes; one that large is not kept).
constexpr size_t kCacheEntries = 64;
constexpr size_t kCacheBytes = size_t(1) << 30;

size_t result_bytes(const OracleResult& r) {
  size_t n = 0;
  for (const at::Tensor& t : r.outputs) n += t.defined() ? size_t(t.numel()) * size_t(t.element_size()) : 0;
  for (const at::Tensor& t : r.scales) n += t.defined() ? size_t(t.numel()) * size_t(t.element_size()) : 0;
  return n;
}

std::mutex g_registry_mu;
std::map<std::string, ModuleReference*>& registry() {
  static std::map<std::string, ModuleReference*> r;
  return r;
}

bool parse_shape(const nlohmann::json& j, std::vector<int64_t>* out) {
  if (!j.is_array()) return false;
  for (const auto& v : j) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0) return false;
    out->push_back(v.get<int64_t>());
  }
  return true;
}

std::string dims_text(const std::vector<int64_t>& s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? "," : "") + std::to_string(s[i]);
  return t + "]";
}

}  // namespace

std::optional<ModuleDescription> parse_module_description(const std::string& text, std::string* error) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  auto bad = [&](const std::string& what) {
    *error = "the reference child's description is malformed: " + what;
    return std::nullopt;
  };
  if (!j.is_object() || !j.contains("inputs") || !j["inputs"].is_array() || !j.contains("outputs") ||
      !j["outputs"].is_array())
    return bad("no inputs/outputs lists");
  ModuleDescription d;
  for (const auto& in : j["inputs"]) {
    ModuleDescription::Input i;
    auto dt = in.is_object() && in.contains("dtype") && in["dtype"].is_string() ? dtype_from_name(in["dtype"]) : std::nullopt;
    if (!dt || !in.contains("shape") || !parse_shape(in["shape"], &i.shape)) return bad("an input without dtype or shape");
    i.dtype = *dt;
    i.kind = in.value("kind", "real");
    i.low = in.value("low", int64_t(0));
    i.high = in.value("high", int64_t(1));
    i.structure = in.value("structure", "");
    d.inputs.push_back(i);
  }
  for (const auto& out : j["outputs"]) {
    ModuleDescription::Output o;
    auto dt = out.is_object() && out.contains("dtype") && out["dtype"].is_string() ? dtype_from_name(out["dtype"]) : std::nullopt;
    if (!dt || !out.contains("shape") || !parse_shape(out["shape"], &o.shape)) return bad("an output without dtype or shape");
    o.dtype = *dt;
    d.outputs.push_back(o);
  }
  for (const char* k : {"ops", "key_ops"})
    if (j.contains(k) && j[k].is_array())
      for (const auto& op : j[k])
        if (op.is_string()) (std::string(k) == "ops" ? d.ops : d.key_ops).push_back(op);
  d.copied_state = j.value("copied_state", 0);
  d.candidate_note = j.value("candidate_note", "");
  if (j.contains("constants") && j["constants"].is_array() && !j["constants"].empty()) {
    for (const auto& c : j["constants"])
      if (!c.is_object() || !c.contains("index") || !c["index"].is_number_integer() || !c.contains("value") ||
          !(c["value"].is_number() || c["value"].is_boolean()))
        return bad("a constant without an index and a number or bool value");
    d.constants = j["constants"].dump();
  }
  return d;
}

namespace {

// The envelope's bounds for a dtype and reduction length, shared by both implementations below.
struct EnvelopeBounds {
  double u;              // the dtype's unit roundoff (scales are expressed in it)
  double floor_rel;      // a float32 accumulator over K terms: what a correct kernel in any float dtype uses
  double ambiguous_rel;  // beyond this the dtype's Model is not rounding but overflowing or underflowing
};

EnvelopeBounds envelope_bounds(DType dtype, int64_t K) {
  const double u32 = num::limits(DType::Float32).unit_roundoff;
  const double u = num::limits(dtype).unit_roundoff;
  const double sqrtK = std::sqrt(double(std::max<int64_t>(K, 1)));
  return {u, kFloorC * u32 * sqrtK, kAmbiguousFactor * kFloorC * std::max(u, u32) * sqrtK};
}

}  // namespace

OracleResult module_envelope_reference(const std::vector<at::Tensor>& ref64, const std::vector<at::Tensor>& lib,
                                       DType dtype, int64_t K) {
  OracleResult r;
  const auto [u, floor_rel, ambiguous_rel] = envelope_bounds(dtype, K);
  for (size_t i = 0; i < ref64.size(); ++i) {
    const at::Tensor ref = ref64[i].to(at::kDouble).contiguous();
    const at::Tensor fin = at::isfinite(ref);
    const at::Tensor mag = at::where(fin, ref.abs(), at::zeros_like(ref));
    const int64_t nfin = fin.sum().item<int64_t>();
    const double m = nfin ? mag.sum().item<double>() / double(nfin) : 0.0;
    const at::Tensor denom = mag + m;
    at::Tensor ambiguous = at::zeros_like(fin);
    double e_lib = 0;
    if (i < lib.size() && lib[i].defined() && lib[i].sizes() == ref.sizes()) {
      const at::Tensor l = lib[i].to(at::kDouble);
      const at::Tensor lfin = at::isfinite(l);
      const at::Tensor err = at::where(fin & lfin & (denom > 0), (l - ref).abs() / denom, at::zeros_like(ref));
      ambiguous = fin & (~lfin | (err > ambiguous_rel));
      const at::Tensor counted = at::where(ambiguous, at::zeros_like(err), err);
      if (counted.numel()) e_lib = counted.max().item<double>();
    }
    const double rel = std::max(kEnvelopeFactor * e_lib, floor_rel);
    at::Tensor scale = at::where(fin, denom * (rel / u), at::zeros_like(ref));
    scale = at::where(ambiguous, at::full_like(scale, INFINITY), scale);
    r.outputs.push_back(ref);
    r.scales.push_back(scale);
  }
  return r;
}

namespace {

// Elements per chunk of the fused envelope: fixed, so the mean's partial sums, and with them the
// scales, are the same bits whatever the thread count.
constexpr int64_t kEnvelopeChunk = int64_t(1) << 16;

}  // namespace

OracleResult module_envelope(const std::vector<at::Tensor>& ref64, const std::vector<at::Tensor>& lib, DType dtype,
                             int64_t K) {
  // module_envelope_reference's arithmetic in three parallel passes over raw doubles: about twenty
  // whole-tensor ATen temporaries there (seconds of page faults per case at KernelBench sizes).
  OracleResult r;
  const auto [u, floor_rel, ambiguous_rel] = envelope_bounds(dtype, K);
  for (size_t i = 0; i < ref64.size(); ++i) {
    const at::Tensor ref = ref64[i].to(at::kDouble).contiguous();
    const double* pr = ref.data_ptr<double>();
    const int64_t n = ref.numel();
    const int64_t chunks = (n + kEnvelopeChunk - 1) / kEnvelopeChunk;
    std::vector<double> part_sum(size_t(chunks), 0.0);
    std::vector<int64_t> part_count(size_t(chunks), 0);
    at::parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c) {
        double sum = 0;
        int64_t count = 0;
        for (int64_t k = c * kEnvelopeChunk, stop = std::min(n, k + kEnvelopeChunk); k < stop; ++k)
          if (std::isfinite(pr[k])) sum += std::fabs(pr[k]), ++count;
        part_sum[size_t(c)] = sum;
        part_count[size_t(c)] = count;
      }
    });
    double total = 0;
    int64_t nfin = 0;
    for (int64_t c = 0; c < chunks; ++c) total += part_sum[size_t(c)], nfin += part_count[size_t(c)];
    const double m = nfin ? total / double(nfin) : 0.0;
    at::Tensor l;
    const double* pl = nullptr;
    if (i < lib.size() && lib[i].defined() && lib[i].sizes() == ref.sizes()) {
      l = lib[i].to(at::kDouble).contiguous();
      pl = l.data_ptr<double>();
    }
    // The framework's relative error at element k, and whether it is too far off to judge there.
    auto lib_error = [&](int64_t k, bool* ambiguous) {
      const double x = pr[k], y = pl[k];
      const bool fin = std::isfinite(x), lfin = std::isfinite(y);
      const double denom = (fin ? std::fabs(x) : 0.0) + m;
      const double err = fin && lfin && denom > 0 ? std::fabs(y - x) / denom : 0.0;
      *ambiguous = fin && (!lfin || err > ambiguous_rel);
      return *ambiguous ? 0.0 : err;
    };
    double e_lib = 0;
    if (pl) {
      std::vector<double> part_max(size_t(chunks), 0.0);
      at::parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
        for (int64_t c = begin; c < end; ++c) {
          double worst = 0;
          bool ambiguous = false;
          for (int64_t k = c * kEnvelopeChunk, stop = std::min(n, k + kEnvelopeChunk); k < stop; ++k)
            worst = std::max(worst, lib_error(k, &ambiguous));
          part_max[size_t(c)] = worst;
        }
      });
      for (double w : part_max) e_lib = std::max(e_lib, w);
    }
    const double rel = std::max(kEnvelopeFactor * e_lib, floor_rel);
    at::Tensor scale = at::empty_like(ref);
    double* ps = scale.data_ptr<double>();
    at::parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t k = begin * kEnvelopeChunk, stop = std::min(n, end * kEnvelopeChunk); k < stop; ++k) {
        bool ambiguous = false;
        if (pl) lib_error(k, &ambiguous);
        const bool fin = std::isfinite(pr[k]);
        ps[k] = ambiguous ? INFINITY : fin ? (std::fabs(pr[k]) + m) * (rel / u) : 0.0;
      }
    });
    r.outputs.push_back(ref);
    r.scales.push_back(scale);
  }
  return r;
}

OpSchema module_schema(const ModuleDescription& d, const std::string& source, const std::string& oracle_id) {
  OpSchema s;
  s.name = kModuleOp;
  s.semantics = "the reference Model of " + source + " in float64, with the candidate's weights";
  s.source_file = source;
  for (size_t k = 0; k < d.inputs.size(); ++k) {
    const ModuleDescription::Input& in = d.inputs[k];
    InputSpec spec;
    spec.name = "x" + std::to_string(k);
    std::vector<std::string> pattern;
    for (size_t a = 0; a < in.shape.size(); ++a) {
      const std::string dim = spec.name + "_" + std::to_string(a);
      DimDomain dom;
      dom.min = dom.max = in.shape[a];
      dom.typical = {in.shape[a]};
      dom.zero_allowed = in.shape[a] == 0;
      s.dims[dim] = dom;
      pattern.push_back(dim);
    }
    spec.shapes = {pattern};
    spec.dtypes = {in.dtype};
    if (in.kind == "index") {
      spec.values.kind = "index";
      spec.values.low = std::to_string(in.low);
      spec.values.below = std::to_string(in.high);
    } else {
      spec.values.kind = in.kind == "nonnegative" ? "nonnegative" : "real";
      spec.values.structure = in.structure;
    }
    spec.layouts = {"contiguous", "transposed", "strided", "offset", "expanded", "channels_last"};
    s.inputs.push_back(spec);
  }
  for (size_t i = 0; i < d.outputs.size(); ++i) {
    OutputSpec o;
    o.name = d.outputs.size() == 1 ? "output" : "output" + std::to_string(i);
    for (int64_t e : d.outputs[i].shape) o.dims.push_back(std::to_string(e));
    o.dtype = dtype_name(d.outputs[i].dtype);
    for (size_t k = 0; k < d.inputs.size(); ++k)
      if (d.inputs[k].dtype == d.outputs[i].dtype) {
        o.dtype = "same:x" + std::to_string(k);
        break;
      }
    s.outputs.push_back(o);
  }
  s.oracle = oracle_id;
  for (const ModuleDescription::Input& in : d.inputs) {
    if (!dtype_is_floating(in.dtype) || s.tolerance.count(in.dtype)) continue;
    Tolerance t;
    t.mode = "module-envelope";
    t.ulps = kEnvelopeUlps;
    t.c = 1;
    t.accumulator = dtype_name(in.dtype);
    t.reason = "module-envelope: at most 16x the worst relative error of the framework's own Model in this dtype, "
               "at least a float32 accumulator over the largest per-sample input size (docs/modules.md)";
    s.tolerance[in.dtype] = t;
  }
  s.determinism = "bitwise";
  // K is 1: the envelope's sqrt(K) lives in the scales. The section marks the module as possibly
  // reducing, so layout changes are judged within tolerance rather than bitwise.
  s.reduction = ReductionInfo{"", "1", "0"};
  s.forbidden_ops = d.key_ops;
  s.error_inputs_note = "an unmapped module declares no domain beyond its get_inputs() shapes";
  return s;
}

bool is_module_schema(const OpSchema& s) { return s.oracle.rfind(kOraclePrefix, 0) == 0; }

std::string module_skip_reason(const std::string& gate) {
  if (gate == "shapes")
    return "an unmapped module (no op schema) has no shape domain beyond its get_inputs() shapes; map it to "
           "a schema (\"op\" in a manifest) to vary them";
  return "an unmapped module (no op schema) has no known reduction to make adversarial; map it to a "
         "schema (\"op\" in a manifest) for the exact-accumulator checks";
}

std::unique_ptr<ModuleReference> ModuleReference::start(const KernelManifest& manifest, const SandboxOptions& sandbox,
                                                        std::string* error) {
  std::unique_ptr<ModuleReference> r(new ModuleReference());
  auto desc = r->launch(manifest, sandbox, error);
  if (!desc) return nullptr;
  r->desc_ = *desc;
  if (desc->inputs.empty()) return (*error = manifest.source + ": get_inputs() returns no tensors", nullptr);
  if (!dtype_is_floating(desc->inputs[0].dtype))
    return (*error = manifest.source + ": the first get_inputs() tensor is " + dtype_name(desc->inputs[0].dtype) +
                     "; an unmapped module's first input must be floating (its dtype is the case dtype)",
            nullptr);
  for (size_t k = 0; k < desc->inputs.size(); ++k)
    if (desc->inputs[k].kind == "bool")
      return (*error = manifest.source + ": get_inputs()[" + std::to_string(k) + "] is a bool tensor, which an unmapped module's cases do not generate", nullptr);
  if (desc->outputs.empty()) return (*error = manifest.source + ": Model returns no tensors", nullptr);
  for (const ModuleDescription::Input& in : desc->inputs) {
    int64_t per_sample = 1;
    for (size_t a = 1; a < in.shape.size(); ++a) per_sample *= in.shape[a];
    r->K_ = std::max(r->K_, in.shape.size() > 1 ? per_sample : (in.shape.empty() ? 1 : in.shape[0]));
  }
  static std::atomic<int> counter{0};
  r->id_ = kOraclePrefix + std::to_string(++counter);
  r->schema_ = module_schema(r->desc_, manifest.source, r->id_);
  std::lock_guard<std::mutex> lock(g_registry_mu);
  registry()[r->id_] = r.get();
  return r;
}

std::optional<ModuleDescription> ModuleReference::describe(const KernelManifest& manifest,
                                                          const SandboxOptions& sandbox, std::string* error) {
  ModuleReference r;
  return r.launch(manifest, sandbox, error);
}

std::optional<ModuleDescription> ModuleReference::launch(const KernelManifest& manifest, const SandboxOptions& sandbox,
                                                        std::string* error) {
  manifest_ = manifest;
  SandboxOptions opts = sandbox;
  // The child serves every gate of the verification: its deadline is not one gate's.
  opts.timeout_seconds = std::max(600, sandbox.timeout_seconds * 10);
  opts.use_zygote = false;
  launcher_ = std::make_unique<Launcher>(opts);
  launcher_->set_python_module(true);
  if (!open(error)) return std::nullopt;
  return parse_module_description(session_->signature(), error);
}

ModuleReference::~ModuleReference() {
  if (!id_.empty()) {
    std::lock_guard<std::mutex> lock(g_registry_mu);
    registry().erase(id_);
  }
  session_.reset();
}

bool ModuleReference::open(std::string* error) {
  session_.reset();
  char resolved[PATH_MAX];
  if (!realpath(manifest_.source.c_str(), resolved))
    return (*error = "cannot resolve the module path " + manifest_.source, false);
  std::string spawn_error;
  session_ = launcher_->spawn(&spawn_error);
  if (!session_) return (*error = "cannot start the reference child: " + spawn_error, false);
  wire::LoadRequest req;
  req.so_path = resolved;
  const std::string cand = manifest_.entry.empty() || manifest_.entry == "forward" ? "ModelNew" : manifest_.entry;
  req.entry = python_load_entry(manifest_, "reference:Model:" + cand);
  req.build_dir = manifest_.module_build_dir;  // the candidate's extensions (its weights are copied)
  req.intra_op_threads = reference_threads_for(launcher_->options());
  Outcome o = session_->load(req);
  if (o.kind != Outcome::Kind::Ok) {
    *error = manifest_.source + ": the reference Model cannot serve as the oracle: " + o.message;
    // The problem's own inputs did not fit the worker's limit: gauntlet's bound, not the module's fault.
    if (o.kind == Outcome::Kind::OutOfMemory || o.message.find("can't allocate memory") != std::string::npos ||
        o.message.find("MemoryError") != std::string::npos)
      *error += " (the problem's get_inputs() and Model need more than the worker's memory limit of " +
                std::to_string(launcher_->options().memory_limit_bytes >> 20) + " MiB: raise --memory-limit)";
    session_.reset();
    return false;
  }
  notes_ = session_->sandbox_notes();
  return true;
}

OracleResult ModuleReference::evaluate(const std::vector<at::Tensor>& inputs) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string key = inputs_digest(inputs);
  if (auto hit = cache_.find(key); hit != cache_.end()) return hit->second;
  wire::CaseRequest req;
  for (const at::Tensor& t : inputs) {
    wire::Arg a;
    a.tensor = t;
    req.args.push_back(a);
  }
  Outcome o;
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::string error;
    if (!session_ && !open(&error)) {
      o.kind = Outcome::Kind::HarnessError;
      o.message = error;
      break;
    }
    o = session_->call(req);
    // A dead or hung child gets one fresh replacement; the reference's own exception does not.
    if (o.kind != Outcome::Kind::Died && o.kind != Outcome::Kind::TimedOut) break;
    session_.reset();
  }
  OracleResult r;
  if (o.kind != Outcome::Kind::Ok || o.reply.calls.empty()) {
    r.error = "the reference Model (" + manifest_.source + "): " + (o.message.empty() ? "no result" : o.message);
    // The problem's fp64 evaluation did not fit the worker's limit: gauntlet's bound, said with the remedy.
    if (o.kind == Outcome::Kind::OutOfMemory || o.message.find("can't allocate memory") != std::string::npos ||
        o.message.find("MemoryError") != std::string::npos)
      r.error += " (its float64 evaluation of this case needs more than the worker's memory limit of " +
                 std::to_string(launcher_->options().memory_limit_bytes >> 20) + " MiB: raise --memory-limit)";
    return r;
  }
  // The case dtype: the first floating input's (the schema's first input is floating).
  DType dtype = DType::Float32;
  for (const at::Tensor& t : inputs)
    if (at::isFloatingType(t.scalar_type())) {
      const at::ScalarType st = t.scalar_type();
      dtype = st == at::kHalf ? DType::Float16 : st == at::kBFloat16 ? DType::BFloat16 : st == at::kDouble ? DType::Float64 : DType::Float32;
      break;
    }
  const std::vector<at::Tensor> none;
  r = module_envelope(o.reply.calls[0].outputs, o.reply.calls.size() > 1 ? o.reply.calls[1].outputs : none, dtype, K_);
  if (r.outputs.size() != desc_.outputs.size())
    r.error = "the reference Model returned " + std::to_string(r.outputs.size()) + " outputs, " +
              std::to_string(desc_.outputs.size()) + " for get_inputs()";
  for (size_t i = 0; r.ok() && i < r.outputs.size(); ++i)
    if (r.outputs[i].sizes().vec() != desc_.outputs[i].shape)
      r.error = "the reference Model's output " + std::to_string(i) + " is " + dims_text(r.outputs[i].sizes().vec()) +
                ", " + dims_text(desc_.outputs[i].shape) + " for get_inputs()";
  const size_t bytes = result_bytes(r);
  if (bytes > kCacheBytes) return r;
  if (cache_.size() >= kCacheEntries || cache_bytes_ + bytes > kCacheBytes) {
    cache_.clear();
    cache_bytes_ = 0;
  }
  if (cache_.emplace(key, r).second) cache_bytes_ += bytes;
  return r;
}

std::optional<OpSchema> start_module_oracle(KernelManifest* manifest_ptr, const SandboxOptions& sandbox,
                                            std::unique_ptr<ModuleReference>* out, std::string* error) {
  const KernelManifest& manifest = *manifest_ptr;
  if (!is_python_module(manifest))
    return (*error = "op \"module\" (the module's own Model as the oracle) needs a Python module, not " + manifest.source,
            std::nullopt);
  // A CUDA or Triton candidate is judged the same way: its Model runs in float64 in a CPU child,
  // on the exact inputs (and with the weights) the candidate saw on the GPU.
  if (manifest.device != "cpu" && manifest.device != "cuda")
    return (*error = manifest.source + ": unknown device " + manifest.device, std::nullopt);
  *out = ModuleReference::start(manifest, sandbox, error);
  if (!*out) return std::nullopt;
  // Every child started for this manifest after the reference passes get_inputs()' constants.
  manifest_ptr->module_constants = (*out)->description().constants;
  return (*out)->schema();
}

nlohmann::json module_oracle_json(const ModuleReference& ref) {
  const ModuleDescription& d = ref.description();
  nlohmann::json j = {{"reference", "Model in float64 (sandboxed Python child)"},
                      {"tolerance", "module-envelope"},
                      {"envelope_factor", kEnvelopeFactor},
                      {"floor_c", kFloorC},
                      {"ulps", kEnvelopeUlps},
                      {"reduction_estimate", ref.reduction_estimate()},
                      {"model_ops", d.ops},
                      {"key_ops", d.key_ops},
                      {"copied_state", d.copied_state}};
  if (!d.candidate_note.empty()) j["candidate_note"] = d.candidate_note;
  return j;
}

bool is_module_oracle_id(const std::string& id) { return id.rfind(kOraclePrefix, 0) == 0; }

OracleResult run_module_oracle(const std::string& id, const std::vector<at::Tensor>& inputs) {
  ModuleReference* ref = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_registry_mu);
    auto it = registry().find(id);
    if (it != registry().end()) ref = it->second;
  }
  if (!ref) {
    OracleResult r;
    r.error = "no live module reference for oracle id '" + id + "'";
    return r;
  }
  return ref->evaluate(inputs);
}

}  // namespace gauntlet
