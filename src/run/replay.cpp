// Replaying a stored case: checks the file against the tool, schema and kernel, re-runs the gate's
// check on exactly that case in a fresh sandbox, and compares verdict and output digest.
#include "gauntlet/run/replay.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <optional>

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

// A replay file, read and checked: its fields, its case, and the tool that wrote it.
struct ReplayFile {
  nlohmann::json j;
  std::string gate_name, op, kernel_sha, schema_sha, tool;
  Case c;
};

// The fields every replay needs, each named when it is missing or of the wrong kind.
bool text_field(const nlohmann::json& obj, const char* key, std::string* out) {
  if (!obj.is_object() || !obj.contains(key) || !obj[key].is_string()) return false;
  *out = obj[key].get<std::string>();
  return true;
}

// Sizes before any allocation: a case larger than this machine's memory is refused, not tried.
std::string too_large_for_this_machine(const Case& c) {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  const double memory = pages > 0 && page > 0 ? double(pages) * double(page) : 0;
  double total = 0;
  for (const TensorRecipe& r : c.tensors) {
    double n = 1;
    for (int64_t d : r.shape) n *= double(std::max<int64_t>(d, 0));
    total += n * double(dtype_size(r.dtype));
  }
  if (memory > 0 && total > memory)
    return "field 'case': its tensors need " + std::to_string(int64_t(total / double(1 << 20))) +
           " MiB, more than this machine's " + std::to_string(int64_t(memory / double(1 << 20))) + " MiB";
  return "";
}

// nullopt when the file is a replay this gauntlet can run; else the exit status, its one line said.
std::optional<int> read_replay_file(const std::string& file, ReplayFile* r) {
  struct stat st {};
  if (stat(file.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return bad_file(file, "a directory, not a replay file");
  std::ifstream in(file);
  if (!in) return bad_file(file, "cannot read the replay file");
  nlohmann::json& j = r->j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception&) {
    return bad_file(file, "corrupt replay file (not valid JSON)");
  }
  if (!j.is_object() || j.value("format", "") != "gauntlet-replay-v1")
    return bad_file(file, "not a gauntlet replay file (format gauntlet-replay-v1)");
  for (auto [key, out] : {std::pair<const char*, std::string*>{"tool_version", &r->tool}, {"gate", &r->gate_name},
                          {"op", &r->op}, {"schema_sha256", &r->schema_sha}})
    if (!text_field(j, key, out)) return bad_file(file, std::string("field '") + key + "': required string");
  if (!text_field(j.contains("kernel") ? j["kernel"] : nlohmann::json(), "sha256", &r->kernel_sha))
    return bad_file(file, "field 'kernel/sha256': required string");
  if (!j.contains("case") || !j["case"].is_object()) return bad_file(file, "field 'case': required object");
  try {
    std::string error;
    if (!case_from_json(j["case"], &r->c, &error)) return bad_file(file, "field 'case': " + error);
  } catch (const nlohmann::json::exception& e) {
    const std::string what = e.what();  // "[json.exception.type_error.302] type must be ..."
    return bad_file(file, "field 'case': " + what.substr(what.find(']') == std::string::npos ? 0 : what.find(']') + 2));
  }
  if (const std::string why = too_large_for_this_machine(r->c); !why.empty()) return bad_file(file, why);
  if (r->tool != GAUNTLET_VERSION_STRING)
    return bad_file(file, "written by gauntlet " + r->tool + ", this is gauntlet " + GAUNTLET_VERSION_STRING +
                              "; replay it with that version");
  return std::nullopt;
}

// The recorded kernel, schema and gate, each checked against the bytes the case was recorded with,
// the kernel built, and the case's inputs regenerated.
struct ReplaySetup {
  replay_sources::Resolved sources;
  std::unique_ptr<ModuleReference> module_ref;
  std::optional<OpSchema> schema;
  std::unique_ptr<Gate> gate;
  std::vector<at::Tensor> inputs;
  BuildResult build;
};

std::optional<int> set_up_replay(const std::string& file, const ReplayFile& r, Launcher& launcher, ReplaySetup* s) {
  std::string error;
  try {
    // The recorded paths when they still hold the recorded bytes, else the file's own copies.
    if (!replay_sources::resolve(r.j, &s->sources, &error)) return bad_file(file, error);
  } catch (const nlohmann::json::exception& e) {
    return bad_file(file, std::string("corrupt replay file: ") + e.what());
  }
  KernelManifest& manifest = s->sources.manifest;
  apply_contract_defaults(&manifest);
  if (sha256_file_hex(manifest.source) != r.kernel_sha)
    return bad_file(file, "kernel " + manifest.source + " does not hold the recorded bytes");
  // A Python module (docs/modules.md) runs in the Python worker; an unmapped one ("op": "module")
  // is judged against its own Model, whose oracle child starts here as in verify.
  const bool python = is_python_module(manifest);
  launcher.set_python_module(python);
  // A module is built (or found built) before its reference child starts: both load its extensions.
  BuildResult module_build;
  if (python) module_build = python_module_build(&manifest, launcher);
  s->schema = r.op == kModuleOp ? start_module_oracle(&manifest, launcher.options(), &s->module_ref, &error)
                                : find_schema(r.op, &error);
  if (!s->schema) return bad_file(file, error);
  if (r.op != kModuleOp) apply_contract_defaults(&manifest, &*s->schema);
  if (sha256_file_hex(s->schema->source_file) != r.schema_sha)
    return bad_file(file, "the schema of " + r.op + " changed since the case was recorded (" + s->schema->source_file + ")");
  s->gate = make_gate(r.gate_name);
  if (!s->gate) return bad_file(file, "unknown gate '" + r.gate_name + "'");
  s->inputs = materialize_all(r.c);
  if (inputs_digest(s->inputs) != r.j.value("inputs_sha256", ""))
    return bad_file(file, "the regenerated inputs differ from the recorded digest (generator changed?)");
  s->build = python ? module_build : build_kernel(native_build_request(manifest), default_build_config());
  return std::nullopt;
}

// A determinism failure is often a race, which need not show on the first try: tried again,
// each in a fresh child, until it fails or kDeterminismTries are spent.
constexpr int kDeterminismTries = 5;

// What the replay printed about the case's verdict against the recorded one.
void print_comparison(std::FILE* out, const std::string& file, const ReplayFile& r, const ReplaySetup& s,
                      const GateVerdict& v, bool retried, int tries) {
  const nlohmann::json recorded = r.j.value("verdict", nlohmann::json::object());
  const bool same_verdict = recorded.value("status", "") == status_name(v.status) &&
                            recorded.value("category", "") == category_name(v.category);
  const std::string recorded_out = r.j.value("outputs_sha256", "");
  std::fprintf(out, "replay %s: %s gate, case %s\n", file.c_str(), r.gate_name.c_str(), r.c.label.c_str());
  std::fprintf(out, "  sources: %s\n", s.sources.note.c_str());
  std::fprintf(out, "  verdict: %s%s%s: %s\n", status_name(v.status), v.category == Category::None ? "" : " ",
               category_name(v.category), v.message.c_str());
  if (v.evidence.contains("diagnosis") && v.evidence["diagnosis"].is_object())
    std::fprintf(out, "  diagnosis: %s: %s\n", v.evidence["diagnosis"].value("name", "").c_str(),
                 v.evidence["diagnosis"].value("text", "").c_str());
  if (retried)
    std::fprintf(out, "  tries: %d of at most %d (%s)\n", tries, kDeterminismTries,
                 is_failing(v.status) ? "the failure showed on the last" : "the failure did not show");
  std::fprintf(out, "  recorded: %s %s\n", recorded.value("status", "?").c_str(), recorded.value("category", "").c_str());
  if (const std::string outside = outside_contract_reason(s.sources.manifest, r.c); !outside.empty())
    std::fprintf(out, "  scope: out-of-contract (%s): a failure here makes the kernel unsafe, not failing\n", outside.c_str());
  // A determinism failure is outputs that vary between calls: its bytes are not expected to
  // repeat, only the verdict. Every other failure reproduces its output bytes too.
  const bool bytes_needed = r.gate_name != "determinism";
  if (!recorded_out.empty() || !v.outputs_sha256.empty())
    std::fprintf(out, "  outputs sha256: %s (recorded %s): %s\n", v.outputs_sha256.c_str(), recorded_out.c_str(),
                 v.outputs_sha256 == recorded_out ? "identical"
                 : bytes_needed                  ? "DIFFERENT"
                                                 : "different (a nondeterministic result need not repeat its bytes)");
  const bool reproduced = same_verdict && (v.outputs_sha256 == recorded_out || !bytes_needed);
  std::fprintf(out, "  reproduced: %s\n", reproduced ? "yes" : "no");
}

// --dump: the case's inputs, and the oracle's and the kernel's outputs, as text and raw bytes.
void dump_values(const std::string& dir, const ReplayFile& r, const ReplaySetup& s, GateContext& ctx, std::FILE* out) {
  build_internal::make_dirs(dir, nullptr);  // a nested --dump path too
  GateVerdict failed;
  auto session = open_session(ctx, r.gate_name, &failed);
  for (size_t i = 0; i < s.inputs.size(); ++i) dump_tensor(dir, "input_" + r.c.tensors[i].name, s.inputs[i]);
  if (session) {
    CaseRun run = run_case(ctx, *session, r.c);
    for (size_t i = 0; i < run.oracle.outputs.size(); ++i) {
      const std::string oname = i < s.schema->outputs.size() ? s.schema->outputs[i].name : std::to_string(i);
      dump_tensor(dir, "expected_" + oname, run.oracle.outputs[i]);
      if (run.outcome.kind == Outcome::Kind::Ok && i < run.outcome.reply.calls[0].outputs.size())
        dump_tensor(dir, "actual_" + oname, run.outcome.reply.calls[0].outputs[i]);
    }
  }
  std::fprintf(out, "  dumped inputs, expected and actual values to %s (.txt and raw .bin)\n", dir.c_str());
}

// --emit: a standalone PyTorch reproducer of the case.
std::optional<int> emit_reproducer(const std::string& file, const std::string& dir, const ReplayFile& r,
                                   const ReplaySetup& s, const GateVerdict& v, std::FILE* out) {
  const OracleResult oracle = run_oracle(s.schema->oracle, s.inputs, r.c.attrs);
  if (!oracle.ok()) return bad_file(file, "--emit: the oracle rejects the recorded case: " + oracle.error);
  nlohmann::json recorded_verdict = r.j.value("verdict", nlohmann::json::object());
  if (v.evidence.contains("diagnosis")) recorded_verdict["diagnosis"] = v.evidence["diagnosis"];
  std::string emit_error;
  if (!replay_emit::emit(dir, {*s.schema, s.sources.manifest, r.c, s.inputs, oracle, r.gate_name, recorded_verdict}, &emit_error))
    return bad_file(file, "--emit " + dir + ": " + emit_error);
  std::fprintf(out, "  reproducer: %s/repro.py (python3 %s/repro.py; needs PyTorch, not gauntlet)\n", dir.c_str(), dir.c_str());
  return std::nullopt;
}

}  // namespace

int run_replay(const ReplayOptions& options, Launcher& launcher, std::FILE* out) {
  const std::string& file = options.file;
  ReplayFile r;
  if (std::optional<int> status = read_replay_file(file, &r)) return *status;
  ReplaySetup s;
  if (std::optional<int> status = set_up_replay(file, r, launcher, &s)) return *status;
  if (!s.build.ok) {
    std::fprintf(out, "replay: the kernel did not build: %s\n", s.build.error.c_str());
    return 1;
  }
  const KernelManifest& manifest = s.sources.manifest;
  CaseSpace space(*s.schema, manifest);
  GateContext ctx{*s.schema, manifest, space, launcher, s.build.so_path, r.kernel_sha, r.schema_sha,
                  r.j.value("master_seed", uint64_t(0)), 1, "", "", {}, {}, {}};
  ctx.cuda_hardware_queues = gate_hardware_queues(r.gate_name);
  const nlohmann::json recorded = r.j.value("verdict", nlohmann::json::object());
  const bool retry = r.gate_name == "determinism" && recorded.value("status", "pass") != "pass";
  GateVerdict v = s.gate->check_one(ctx, r.c);
  int tries = 1;
  for (; retry && tries < kDeterminismTries && !is_failing(v.status); ++tries) v = s.gate->check_one(ctx, r.c);
  print_comparison(out, file, r, s, v, retry, tries);
  if (!options.dump_dir.empty()) dump_values(options.dump_dir, r, s, ctx, out);
  if (!options.emit_dir.empty())
    if (std::optional<int> status = emit_reproducer(file, options.emit_dir, r, s, v, out)) return *status;
  if (v.status == Status::HarnessError) return 2;
  return v.status == Status::Pass || v.status == Status::Skip ? 0 : 1;
}

}  // namespace gauntlet
