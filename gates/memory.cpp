// Gate 10, memory: inputs unmodified, canaries intact, every output written, no uninitialized reads, ASan clean.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <regex>

#include <unistd.h>

#include "gauntlet/builder.h"
#include "gauntlet/gate.h"
#include "gauntlet/judge.h"

namespace gauntlet {

// Testable pieces (tests/gates/memory_test.cpp declares them).
namespace memory_gate {

// The kind line of an AddressSanitizer report ("heap-buffer-overflow", "READ of size 4", where).
struct AsanReport {
  bool found = false;
  std::string kind;    // e.g. heap-buffer-overflow
  std::string access;  // e.g. READ of size 4 (empty for reports without one, e.g. SEGV)
  std::string where;   // e.g. 0 bytes after 4000-byte region
};

AsanReport parse_asan_report(const std::string& text) {
  AsanReport r;
  std::smatch m;
  if (!std::regex_search(text, m, std::regex(R"(ERROR: AddressSanitizer: ([A-Za-z0-9_-]+))"))) return r;
  r.found = true;
  r.kind = m[1];
  if (std::regex_search(text, m, std::regex(R"((READ|WRITE) of size (\d+))"))) r.access = m[0];
  if (std::regex_search(text, m, std::regex(R"(located (\d+ bytes (to the right|to the left|inside|after|before) of \d+-byte region))")))
    r.where = m[1];
  return r;
}

// The compiler's ASan runtime ("" when it has none: `-print-file-name` echoes the bare name back).
std::string asan_runtime(const std::string& cxx) {
  std::string cmd = cxx + " -print-file-name=libasan.so 2>/dev/null";
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[512];
    while (fgets(buf, sizeof buf, p)) out += buf;
    pclose(p);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  if (out.empty() || out[0] != '/' || access(out.c_str(), R_OK) != 0) return "";
  return out;
}

}  // namespace memory_gate

namespace {

constexpr const char* kGate = "memory";
// Two children poisoned differently: 0xFF is NaN in every float dtype, 0xA5 a finite value, so
// a result that reads memory nobody wrote differs between them.
constexpr uint8_t kPoisonA = 0xA5, kPoisonB = 0xFF;
constexpr uint32_t kGuardBytes = 64;  // per side, per buffer: a multiple of c10's 64-byte alignment
// detect_leaks: LeakSanitizer stops the world with ptrace, which seccomp traps. symbolize: the
// symbolizer is an exec. The ASan child has no RLIMIT_DATA (shadow memory is terabytes of reserve).
constexpr const char* kAsanOptions =
    "ASAN_OPTIONS=detect_leaks=0:symbolize=0:halt_on_error=1:abort_on_error=0:allocator_may_return_null=1:"
    "detect_odr_violation=0:alloc_dealloc_mismatch=0:quarantine_size_mb=32:malloc_context_size=4";

std::string hex(uint8_t b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02X", b);
  return buf;
}

// A child loaded for this gate: its own poison and guards, from `launcher` (the ASan one for ASan).
std::unique_ptr<WorkerSession> open_child(GateContext& ctx, Launcher& launcher, uint8_t poison, uint32_t guard,
                                          const std::string& so_path, GateVerdict* failed) {
  const int64_t t0 = wire::now_ms();
  std::string error;
  std::unique_ptr<WorkerSession> s = launcher.spawn(&error);
  failed->name = kGate;
  if (!s) {
    failed->status = Status::HarnessError;
    failed->category = Category::HarnessError;
    failed->message = "cannot start a sandboxed worker: " + error;
  } else {
    wire::LoadRequest req;
    req.so_path = so_path;
    req.entry = ctx.manifest.entry;
    req.poison_byte = poison;
    req.guard_bytes = guard;
    req.device = ctx.manifest.device;
    Outcome o = s->load(req);
    if (o.kind != Outcome::Kind::Ok) {
      failed->status = status_for(o.kind);
      failed->category = o.category;
      failed->message = "loading the kernel (allocator poison " + hex(poison) + "): " + o.message;
      s.reset();
    } else if (ctx.sandbox_note.empty()) {
      ctx.sandbox_note = launcher.isolation_note() + (s->sandbox_notes().empty() ? "" : "; " + s->sandbox_notes());
    }
  }
  ctx.timing.spawn += double(wire::now_ms() - t0) / 1000.0;
  ++ctx.timing.children;
  return s;
}

Outcome timed_call(GateContext& ctx, WorkerSession& s, const Case& c, const std::vector<at::Tensor>& inputs) {
  wire::CaseRequest req;
  req.case_id = c.index;
  req.args = make_args(ctx.schema, inputs, c.attrs);
  const auto t0 = std::chrono::steady_clock::now();
  Outcome o = s.call(req);
  ctx.timing.call += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ctx.timing.kernel += o.reply.kernel_seconds;
  return o;
}

std::string input_name(const GateContext& ctx, int32_t j) {
  return j >= 0 && size_t(j) < ctx.schema.inputs.size() ? "input '" + ctx.schema.inputs[size_t(j)].name + "'"
                                                          : "input " + std::to_string(j);
}
std::string output_name(const GateContext& ctx, size_t i) {
  return i < ctx.schema.outputs.size() ? "output '" + ctx.schema.outputs[i].name + "'" : "output " + std::to_string(i);
}

// One line per finding kind, naming the buffer and the bytes.
std::string describe(const GateContext& ctx, const wire::MemoryFinding& f) {
  using F = wire::MemoryFinding;
  std::string buf;
  switch (f.buffer) {
    case F::Buffer::Input: buf = input_name(ctx, f.index); break;
    case F::Buffer::Output: buf = output_name(ctx, size_t(f.index)); break;
    case F::Buffer::Temporary: buf = "a temporary buffer the kernel allocated"; break;
    case F::Buffer::Other: buf = "a buffer allocated before this call"; break;
  }
  const std::string size = " (" + std::to_string(f.buffer_bytes) + " bytes)";
  if (f.kind == F::Kind::InputModified) {
    if (f.offset < 0) return buf + " resized in place by " + std::to_string(f.bytes) + " bytes";
    return buf + " modified in place: " + std::to_string(f.bytes) + " of " + std::to_string(f.buffer_bytes) +
           " bytes changed, the first at byte " + std::to_string(f.offset);
  }
  const std::string span = std::to_string(f.offset) + ".." + std::to_string(f.offset + f.bytes - 1);
  if (f.kind == F::Kind::CanaryAfter) {
    const int64_t gap = f.offset - f.buffer_bytes;
    return "write past the end of " + buf + size + ": canary bytes " + span + " changed, " +
           (gap == 0 ? std::string("starting right at its end") : "starting " + std::to_string(gap) + " bytes past its end");
  }
  return "write before the start of " + buf + size + ": canary bytes " + span + " changed";
}

// Elements whose bytes differ between the two poisons; "" when every output agrees.
std::string compare_poisons(const GateContext& ctx, const wire::CallOutputs& a, const wire::CallOutputs& b,
                            nlohmann::json* evidence) {
  if (a.outputs.size() != b.outputs.size())
    return std::to_string(b.outputs.size()) + " outputs under poison " + hex(kPoisonB) + ", " +
           std::to_string(a.outputs.size()) + " under " + hex(kPoisonA);
  for (size_t i = 0; i < a.outputs.size(); ++i) {
    const at::Tensor x = a.outputs[i].contiguous(), y = b.outputs[i].contiguous();
    if (x.sizes() != y.sizes() || x.scalar_type() != y.scalar_type())
      return output_name(ctx, i) + " has another shape or dtype under poison " + hex(kPoisonB);
    const size_t es = size_t(x.element_size());
    const auto* p = static_cast<const unsigned char*>(x.data_ptr());
    const auto* q = static_cast<const unsigned char*>(y.data_ptr());
    int64_t first = -1, count = 0, unwritten = 0, first_unwritten = -1;
    for (int64_t k = 0; k < x.numel(); ++k) {
      const unsigned char* u = p + size_t(k) * es;
      const unsigned char* w = q + size_t(k) * es;
      if (std::memcmp(u, w, es) == 0) continue;
      if (first < 0) first = k;
      ++count;
      bool sentinel = true;  // the poison byte in both: the allocator's, never overwritten
      for (size_t e = 0; e < es; ++e) sentinel = sentinel && u[e] == kPoisonA && w[e] == kPoisonB;
      if (sentinel && first_unwritten < 0) first_unwritten = k;
      unwritten += sentinel;
    }
    if (first < 0) continue;
    *evidence = {{"output", i}, {"differing_elements", count}, {"never_written", unwritten}, {"elements", x.numel()}};
    const std::string diff = std::to_string(count) + " of " + std::to_string(x.numel()) + " elements of " +
                             output_name(ctx, i) + " differ between allocator poisons " + hex(kPoisonA) + " and " +
                             hex(kPoisonB);
    if (unwritten)
      return diff + "; " + std::to_string(unwritten) + " never written (they hold the poison bytes), the first at " +
             index_text(x.sizes(), first_unwritten);
    char vals[96];
    std::snprintf(vals, sizeof vals, " (%.9g vs %.9g)", x.reshape({-1})[first].item<double>(),
                  y.reshape({-1})[first].item<double>());
    return diff + ": the result depends on uninitialized memory, first at " + index_text(x.sizes(), first) + vals;
  }
  return "";
}

// The ASan sub-check's child: a separately built .so, run fork+exec'd with the runtime preloaded.
struct AsanChild {
  std::string skipped;  // why the sub-check did not run ("" when it runs)
  std::string so_path;
  std::unique_ptr<Launcher> launcher;
  std::unique_ptr<WorkerSession> session;
  int cases = 0;
};

}  // namespace

namespace {

class MemoryGate : public Gate {
 public:
  std::string name() const override { return kGate; }

  GateVerdict run(GateContext& ctx) override {
    const std::vector<Case> cases = make_cases(ctx);
    if (cases.empty()) {
      GateVerdict v;
      v.name = kGate;
      v.status = Status::HarnessError;
      v.category = Category::HarnessError;
      v.message = "no typical case could be generated inside the kernel's contract";
      return v;
    }
    return check_all(ctx, cases);
  }

  GateVerdict check_one(GateContext& ctx, const Case& c) override { return check_all(ctx, {c}); }

 private:
  // A handful of typical cases per dtype plus one with odd sizes (vector tails, partial tiles).
  static std::vector<Case> make_cases(GateContext& ctx) {
    std::vector<Case> out;
    for (size_t d = 0; d < ctx.space.dtypes().size(); ++d) {
      const DType dtype = ctx.space.dtypes()[d];
      Case first;
      for (int r = 0; r < 2 * ctx.budget; ++r) {
        Case c;
        std::string error;
        const uint64_t index = out.size();
        if (!ctx.space.typical_case(uint64_t(r) + d, dtype, Distribution::Normal, ctx.case_seed(kGate, index), &c, &error))
          continue;
        c.index = index;
        if (first.tensors.empty()) first = c;
        out.push_back(c);
      }
      if (first.tensors.empty()) continue;
      // Even sizes become odd (one less, or one more where that leaves the contract).
      std::map<std::string, int64_t> dims = first.dims;
      bool changed = false;
      for (auto& [name, v] : dims) {
        auto [lo, hi] = ctx.space.limits_for(name);
        if (v % 2) continue;
        if (v - 1 >= std::max<int64_t>(lo, 1)) v -= 1, changed = true;
        else if (v + 1 <= hi) v += 1, changed = true;
      }
      Case c;
      std::string error;
      const uint64_t index = out.size();
      if (changed && ctx.space.build(dims, 0, first.attrs, dtype, Distribution::Normal, ctx.case_seed(kGate, index), &c, &error)) {
        c.index = index;
        out.push_back(c);
      }
    }
    return out;
  }

  GateVerdict check_all(GateContext& ctx, const std::vector<Case>& cases) {
    GateVerdict failed;
    auto a = open_child(ctx, ctx.launcher, kPoisonA, kGuardBytes, ctx.so_path, &failed);
    if (!a) return failed;
    auto b = open_child(ctx, ctx.launcher, kPoisonB, kGuardBytes, ctx.so_path, &failed);
    if (!b) return failed;
    std::vector<std::vector<at::Tensor>> inputs;
    for (const Case& c : cases) {
      GateVerdict v = check_case(ctx, *a, *b, c, &inputs.emplace_back());
      if (v.status != Status::Pass) return v;
    }
    a->finish();
    b->finish();
    AsanChild asan;
    open_asan(ctx, asan);
    for (size_t k = 0; k < cases.size() && asan.session; ++k) {
      GateVerdict v = check_asan(ctx, asan, cases[k], inputs[k]);
      if (v.status != Status::Pass) return v;
    }
    GateVerdict v;
    v.name = kGate;
    v.cases = int(cases.size());
    v.message = std::to_string(cases.size()) + " cases: inputs bitwise unmodified, " + std::to_string(kGuardBytes) +
                "-byte canaries around every buffer intact, outputs identical under allocator poisons " + hex(kPoisonA) +
                " and " + hex(kPoisonB) + " (every element written, nothing uninitialized read); ";
    v.message += asan.skipped.empty() ? "AddressSanitizer build clean on " + std::to_string(asan.cases) + " cases"
                                      : "AddressSanitizer sub-check skipped: " + asan.skipped;
    v.evidence = {{"cases", cases.size()}, {"guard_bytes", kGuardBytes}, {"asan_cases", asan.cases}};
    if (!asan.skipped.empty()) v.evidence["asan_skipped"] = asan.skipped;
    return v;
  }

  static GateVerdict passed() {
    GateVerdict v;
    v.name = kGate;
    return v;
  }

  static GateVerdict failure(GateContext& ctx, CaseRun& run, Category cat, const std::string& message) {
    GateVerdict v;
    v.name = kGate;
    v.cases = 1;
    v.status = Status::Fail;
    v.category = cat;
    v.message = "case " + run.c.label + ": " + message;
    note_outputs(v, run);
    v.replay = write_replay(ctx, kGate, run, v);
    return v;
  }

  static GateVerdict error_from(GateContext& ctx, CaseRun& run, const std::string& which) {
    GateVerdict v = verdict_from_outcome(kGate, run);
    v.cases = 1;
    v.message += " (" + which + ")";
    if (v.status != Status::HarnessError) v.replay = write_replay(ctx, kGate, run, v);
    return v;
  }

  // Both poisoned, guarded children: findings in either, then the outputs compared bitwise.
  GateVerdict check_case(GateContext& ctx, WorkerSession& a, WorkerSession& b, const Case& c,
                         std::vector<at::Tensor>* inputs) {
    CaseRun run;
    run.c = c;
    const auto t0 = std::chrono::steady_clock::now();
    run.inputs = materialize_all(c);
    *inputs = run.inputs;
    ctx.timing.oracle += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    run.outcome = timed_call(ctx, a, c, run.inputs);
    if (run.outcome.kind != Outcome::Kind::Ok) return error_from(ctx, run, "allocator poison " + hex(kPoisonA));
    CaseRun second = run;
    second.outcome = timed_call(ctx, b, c, run.inputs);
    if (second.outcome.kind != Outcome::Kind::Ok) return error_from(ctx, second, "allocator poison " + hex(kPoisonB));
    for (const CaseRun* r : {&run, &second}) {
      const auto& f = r->outcome.reply.memory_findings;
      if (f.empty()) {
        if (!r->outcome.reply.inputs_unchanged) return failure(ctx, run, Category::WrongResult, "an input was modified in place");
        continue;
      }
      std::string msg = describe(ctx, f[0]);
      if (f.size() > 1) msg += " (and " + std::to_string(f.size() - 1) + " more)";
      GateVerdict v = failure(ctx, run, Category::WrongResult, msg);
      for (const wire::MemoryFinding& x : f)
        v.evidence["findings"].push_back(describe(ctx, x));
      return v;
    }
    nlohmann::json evidence;
    const std::string diff = compare_poisons(ctx, run.outcome.reply.calls.at(0), second.outcome.reply.calls.at(0), &evidence);
    if (diff.empty()) return passed();
    GateVerdict v = failure(ctx, run, Category::WrongResult, diff);
    v.evidence = evidence;
    return v;
  }

  // Builds the ASan variant and starts its child; `skipped` says why when it cannot.
  static void open_asan(GateContext& ctx, AsanChild& out) {
    if (ctx.manifest.device != "cpu") return void(out.skipped = "compute-sanitizer for CUDA kernels is not in this version");
    const BuildConfig cfg = default_build_config();
    const std::string runtime = memory_gate::asan_runtime(cfg.cxx);
    if (runtime.empty()) return void(out.skipped = "the compiler " + cfg.cxx + " has no libasan.so");
    BuildRequest req;
    req.source_path = ctx.manifest.source;
    req.entries = {ctx.manifest.entry};
    if (!ctx.manifest.backward_entry.empty()) req.entries.push_back(ctx.manifest.backward_entry);
    req.device = ctx.manifest.device;
    req.address_sanitizer = true;
    const BuildResult built = build_kernel(req, cfg);
    ctx.timing.spawn += built.seconds;
    if (!built.ok) return void(out.skipped = "the ASan build failed: " + built.error);
    SandboxOptions opts = ctx.launcher.options();
    opts.use_zygote = false;         // the runtime must be preloaded at exec
    opts.memory_limit_bytes = 0;     // no RLIMIT_DATA: ASan reserves terabytes of shadow address space
    std::string asan_options = kAsanOptions;
    // RLIMIT_DATA's stand-in: ASan's own RSS watchdog (a background thread) at the same limit.
    if (ctx.launcher.options().memory_limit_bytes > 0)
      asan_options += ":hard_rss_limit_mb=" + std::to_string(std::max<int64_t>(1, ctx.launcher.options().memory_limit_bytes >> 20));
    opts.extra_env = {"LD_PRELOAD=" + runtime, asan_options};
    out.launcher = std::make_unique<Launcher>(opts);
    GateVerdict failed;
    // No canaries here: ASan's own redzones must sit right against each buffer.
    out.session = open_child(ctx, *out.launcher, kPoisonA, 0, built.so_path, &failed);
    if (!out.session) out.skipped = "the ASan child did not start: " + failed.message;
  }

  GateVerdict check_asan(GateContext& ctx, AsanChild& asan, const Case& c, const std::vector<at::Tensor>& inputs) {
    CaseRun run;
    run.c = c;
    run.inputs = inputs;
    run.outcome = timed_call(ctx, *asan.session, c, inputs);
    ++asan.cases;
    if (run.outcome.kind == Outcome::Kind::Ok) return passed();
    const std::string text = asan.session->captured_output(size_t(1) << 16);
    const memory_gate::AsanReport rep = memory_gate::parse_asan_report(text);
    if (!rep.found) return error_from(ctx, run, "AddressSanitizer build; the plain build ran this case");
    if (text.find("rss limit exhausted") != std::string::npos) {
      GateVerdict v = verdict_from_outcome(kGate, run);
      v.status = Status::Error;
      v.category = Category::OutOfMemory;
      v.message = "case " + c.label + ": the AddressSanitizer build exceeded the memory limit (ASan's RSS watchdog)";
      v.cases = 1;
      v.replay = write_replay(ctx, kGate, run, v);
      return v;
    }
    // An invalid access is a memory-safety violation whatever the result: fail, category crash
    // (what it is in a build without the sanitizer on an unlucky day).
    std::string msg = "AddressSanitizer: " + rep.kind;
    if (!rep.access.empty()) msg += ", " + rep.access;
    if (!rep.where.empty()) msg += ", " + rep.where;
    GateVerdict v = failure(ctx, run, Category::Crash, msg + " (ASan build of the kernel)");
    v.evidence = {{"asan_kind", rep.kind}, {"asan_access", rep.access}, {"asan_where", rep.where}};
    return v;
  }
};

}  // namespace

std::unique_ptr<Gate> make_memory_gate() { return std::make_unique<MemoryGate>(); }

}  // namespace gauntlet
