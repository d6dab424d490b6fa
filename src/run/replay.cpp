// Replaying a stored case: checks the file against the tool, schema and kernel, re-runs the gate's
// check on exactly that case in a fresh sandbox, and compares verdict and output digest.
#include "gauntlet/run/replay.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "gauntlet/build/build_cache.h"
#include "gauntlet/cases/replay_emit.h"
#include "gauntlet/cases/replay_sources.h"
#include "gauntlet/cases/contract_scope.h"
#include "gauntlet/oracle/module_oracle.h"
#include "gauntlet/run/verify.h"
#include "gauntlet/version.h"

namespace gauntlet {
namespace {

int bad_file(const std::string& file, const std::string& why) {
  std::fprintf(stderr, "gauntlet: error: %s: %s\n", file.c_str(), why.c_str());
  return 2;
}

void dump_tensor(const std::string& dir, const std::string& name, const at::Tensor& t0) {
  at::Tensor t = t0.contiguous();
  std::ofstream bin(dir + "/" + name + ".bin", std::ios::binary);
  bin.write(static_cast<const char*>(t.data_ptr()), std::streamsize(t.numel() * t.element_size()));
  std::ofstream txt(dir + "/" + name + ".txt");
  txt << "# " << c10::toString(t.scalar_type()) << " " << t.sizes() << "\n";
  at::Tensor d = at::isFloatingType(t.scalar_type()) ? t.to(at::kDouble) : t.to(at::kLong);
  char buf[64];
  for (int64_t i = 0; i < d.numel(); ++i) {
    if (d.scalar_type() == at::kDouble) std::snprintf(buf, sizeof buf, "%.17g\n", d.data_ptr<double>()[i]);
    else std::snprintf(buf, sizeof buf, "%lld\n", (long long)d.data_ptr<int64_t>()[i]);
    txt << buf;
  }
}

}  // namespace

int run_replay(const ReplayOptions& options, Launcher& launcher, std::FILE* out) {
  const std::string& file = options.file;
  struct stat st {};
  if (stat(file.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return bad_file(file, "a directory, not a replay file");
  std::ifstream in(file);
  if (!in) return bad_file(file, "cannot read the replay file");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception&) {
    return bad_file(file, "corrupt replay file (not valid JSON)");
  }
  if (!j.is_object() || j.value("format", "") != "gauntlet-replay-v1")
    return bad_file(file, "not a gauntlet replay file (format gauntlet-replay-v1)");
  std::string gate_name, op, kernel_sha, schema_sha, tool;
  Case c;
  replay_sources::Resolved sources;
  // The fields every replay needs, each named when it is missing or of the wrong kind.
  auto text = [](const nlohmann::json& obj, const char* key, std::string* out) {
    if (!obj.is_object() || !obj.contains(key) || !obj[key].is_string()) return false;
    *out = obj[key].get<std::string>();
    return true;
  };
  for (auto [key, out] : {std::pair<const char*, std::string*>{"tool_version", &tool}, {"gate", &gate_name},
                          {"op", &op}, {"schema_sha256", &schema_sha}})
    if (!text(j, key, out)) return bad_file(file, std::string("field '") + key + "': required string");
  if (!text(j.contains("kernel") ? j["kernel"] : nlohmann::json(), "sha256", &kernel_sha))
    return bad_file(file, "field 'kernel/sha256': required string");
  if (!j.contains("case") || !j["case"].is_object()) return bad_file(file, "field 'case': required object");
  try {
    std::string error;
    if (!case_from_json(j["case"], &c, &error)) return bad_file(file, "field 'case': " + error);
  } catch (const nlohmann::json::exception& e) {
    const std::string what = e.what();  // "[json.exception.type_error.302] type must be ..."
    return bad_file(file, "field 'case': " + what.substr(what.find(']') == std::string::npos ? 0 : what.find(']') + 2));
  }
  // Sizes before any allocation: a case larger than this machine's memory is refused, not tried.
  {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    const double memory = pages > 0 && page > 0 ? double(pages) * double(page) : 0;
    double total = 0;
    for (const TensorRecipe& r : c.tensors) {
      double n = 1;
      for (int64_t d : r.shape) n *= double(std::max<int64_t>(d, 0));
      total += n * double(dtype_size(r.dtype));
    }
    if (memory > 0 && total > memory)
      return bad_file(file, "field 'case': its tensors need " + std::to_string(int64_t(total / double(1 << 20))) +
                                " MiB, more than this machine's " + std::to_string(int64_t(memory / double(1 << 20))) +
                                " MiB");
  }
  if (tool != GAUNTLET_VERSION_STRING)
    return bad_file(file, "written by gauntlet " + tool + ", this is gauntlet " + GAUNTLET_VERSION_STRING +
                              "; replay it with that version");
  std::string error;
  try {
    // The recorded paths when they still hold the recorded bytes, else the file's own copies.
    if (!replay_sources::resolve(j, &sources, &error)) return bad_file(file, error);
  } catch (const nlohmann::json::exception& e) {
    return bad_file(file, std::string("corrupt replay file: ") + e.what());
  }
  KernelManifest& manifest = sources.manifest;
  apply_contract_defaults(&manifest);
  const std::string source = manifest.source, entry = manifest.entry, device = manifest.device;
  const std::string actual_sha = sha256_file_hex(source);
  if (actual_sha != kernel_sha) return bad_file(file, "kernel " + source + " does not hold the recorded bytes");
  // A Python module (docs/modules.md) runs in the Python worker; an unmapped one ("op": "module")
  // is judged against its own Model, whose oracle child starts here as in verify.
  const bool python = is_python_module(manifest);
  launcher.set_python_module(python);
  // A module is built (or found built) before its reference child starts: both load its extensions.
  BuildResult module_build;
  if (python) module_build = python_module_build(&manifest, launcher);
  std::unique_ptr<ModuleReference> module_ref;
  auto schema = op == kModuleOp ? start_module_oracle(&manifest, launcher.options(), &module_ref, &error)
                                : find_schema(op, &error);
  if (!schema) return bad_file(file, error);
  if (op != kModuleOp) apply_contract_defaults(&manifest, &*schema);
  if (sha256_file_hex(schema->source_file) != schema_sha)
    return bad_file(file, "the schema of " + op + " changed since the case was recorded (" + schema->source_file + ")");
  auto gate = make_gate(gate_name);
  if (!gate) return bad_file(file, "unknown gate '" + gate_name + "'");
  std::vector<at::Tensor> inputs = materialize_all(c);
  if (inputs_digest(inputs) != j.value("inputs_sha256", ""))
    return bad_file(file, "the regenerated inputs differ from the recorded digest (generator changed?)");

  BuildRequest req;
  req.source_path = source;
  req.entries = {entry};
  if (!manifest.backward_entry.empty()) req.entries.push_back(manifest.backward_entry);
  req.device = device;
  BuildResult build = python ? module_build : build_kernel(req, default_build_config());
  if (!build.ok) {
    std::fprintf(out, "replay: the kernel did not build: %s\n", build.error.c_str());
    return 1;
  }
  CaseSpace space(*schema, manifest);
  GateContext ctx{*schema, manifest, space, launcher, build.so_path, kernel_sha, schema_sha,
                  j.value("master_seed", uint64_t(0)), 1, "", "", {}, {}, {}};
  ctx.cuda_hardware_queues = gate_hardware_queues(gate_name);
  const nlohmann::json recorded = j.value("verdict", nlohmann::json::object());
  // A determinism failure is often a race, which need not show on the first try: tried again,
  // each in a fresh child, until it fails or kDeterminismTries are spent.
  constexpr int kDeterminismTries = 5;
  const bool retry = gate_name == "determinism" && recorded.value("status", "pass") != "pass";
  GateVerdict v = gate->check_one(ctx, c);
  int tries = 1;
  for (; retry && tries < kDeterminismTries && !is_failing(v.status); ++tries) v = gate->check_one(ctx, c);
  const bool same_verdict = recorded.value("status", "") == status_name(v.status) &&
                            recorded.value("category", "") == category_name(v.category);
  const std::string recorded_out = j.value("outputs_sha256", "");
  std::fprintf(out, "replay %s: %s gate, case %s\n", file.c_str(), gate_name.c_str(), c.label.c_str());
  std::fprintf(out, "  sources: %s\n", sources.note.c_str());
  std::fprintf(out, "  verdict: %s%s%s: %s\n", status_name(v.status), v.category == Category::None ? "" : " ",
               category_name(v.category), v.message.c_str());
  if (v.evidence.contains("diagnosis") && v.evidence["diagnosis"].is_object())
    std::fprintf(out, "  diagnosis: %s: %s\n", v.evidence["diagnosis"].value("name", "").c_str(),
                 v.evidence["diagnosis"].value("text", "").c_str());
  if (retry)
    std::fprintf(out, "  tries: %d of at most %d (%s)\n", tries, kDeterminismTries,
                 is_failing(v.status) ? "the failure showed on the last" : "the failure did not show");
  std::fprintf(out, "  recorded: %s %s\n", recorded.value("status", "?").c_str(), recorded.value("category", "").c_str());
  if (const std::string outside = outside_contract_reason(manifest, c); !outside.empty())
    std::fprintf(out, "  scope: out-of-contract (%s): a failure here makes the kernel unsafe, not failing\n", outside.c_str());
  // A determinism failure is outputs that vary between calls: its bytes are not expected to
  // repeat, only the verdict. Every other failure reproduces its output bytes too.
  const bool bytes_needed = gate_name != "determinism";
  if (!recorded_out.empty() || !v.outputs_sha256.empty())
    std::fprintf(out, "  outputs sha256: %s (recorded %s): %s\n", v.outputs_sha256.c_str(), recorded_out.c_str(),
                 v.outputs_sha256 == recorded_out ? "identical"
                 : bytes_needed                  ? "DIFFERENT"
                                                 : "different (a nondeterministic result need not repeat its bytes)");
  const bool reproduced = same_verdict && (v.outputs_sha256 == recorded_out || !bytes_needed);
  std::fprintf(out, "  reproduced: %s\n", reproduced ? "yes" : "no");

  if (!options.dump_dir.empty()) {
    build_internal::make_dirs(options.dump_dir, nullptr);  // a nested --dump path too
    GateVerdict failed;
    auto session = open_session(ctx, gate_name, &failed);
    for (size_t i = 0; i < inputs.size(); ++i) dump_tensor(options.dump_dir, "input_" + c.tensors[i].name, inputs[i]);
    if (session) {
      CaseRun run = run_case(ctx, *session, c);
      for (size_t i = 0; i < run.oracle.outputs.size(); ++i) {
        const std::string oname = i < schema->outputs.size() ? schema->outputs[i].name : std::to_string(i);
        dump_tensor(options.dump_dir, "expected_" + oname, run.oracle.outputs[i]);
        if (run.outcome.kind == Outcome::Kind::Ok && i < run.outcome.reply.calls[0].outputs.size())
          dump_tensor(options.dump_dir, "actual_" + oname, run.outcome.reply.calls[0].outputs[i]);
      }
    }
    std::fprintf(out, "  dumped inputs, expected and actual values to %s (.txt and raw .bin)\n", options.dump_dir.c_str());
  }
  if (!options.emit_dir.empty()) {
    const OracleResult oracle = run_oracle(schema->oracle, inputs, c.attrs);
    if (!oracle.ok()) return bad_file(file, "--emit: the oracle rejects the recorded case: " + oracle.error);
    nlohmann::json recorded_verdict = recorded;
    if (v.evidence.contains("diagnosis")) recorded_verdict["diagnosis"] = v.evidence["diagnosis"];
    std::string emit_error;
    if (!replay_emit::emit(options.emit_dir, {*schema, manifest, c, inputs, oracle, gate_name, recorded_verdict}, &emit_error))
      return bad_file(file, "--emit " + options.emit_dir + ": " + emit_error);
    std::fprintf(out, "  reproducer: %s/repro.py (python3 %s/repro.py; needs PyTorch, not gauntlet)\n",
                 options.emit_dir.c_str(), options.emit_dir.c_str());
  }
  if (v.status == Status::HarnessError) return 2;
  return v.status == Status::Pass || v.status == Status::Skip ? 0 : 1;
}

}  // namespace gauntlet
