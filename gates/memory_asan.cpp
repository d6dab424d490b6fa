// The memory gate's AddressSanitizer sub-check (CPU kernels): an ASan build of the kernel run on every case.
#include "memory_asan.h"

#include <algorithm>
#include <cstdio>
#include <regex>

#include <unistd.h>

#include "gauntlet/build/builder.h"
#include "memory_children.h"

namespace gauntlet::memory_gate {

namespace {

// detect_leaks: LeakSanitizer stops the world with ptrace, which seccomp traps. symbolize: the
// symbolizer is an exec. The ASan child has no RLIMIT_DATA (shadow memory is terabytes of reserve).
constexpr const char* kAsanOptions =
    "ASAN_OPTIONS=detect_leaks=0:symbolize=0:halt_on_error=1:abort_on_error=0:allocator_may_return_null=1:"
    "detect_odr_violation=0:alloc_dealloc_mismatch=0:quarantine_size_mb=32:malloc_context_size=4";

}  // namespace

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

void open_asan(GateContext& ctx, AsanChild& out) {
  if (ctx.manifest.device != "cpu") return void(out.skipped = "not for CUDA kernels (compute-sanitizer runs instead)");
  if (is_python_module(ctx.manifest))
    return void(out.skipped = "not for Python modules: there is no native build to instrument (docs/modules.md)");
  const BuildConfig cfg = default_build_config();
  const std::string runtime = asan_runtime(cfg.cxx);
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
  const AsanReport rep = parse_asan_report(text);
  if (!rep.found) return error_from(ctx, run, "AddressSanitizer build; the plain build ran this case");
  if (text.find("rss limit exhausted") != std::string::npos) {
    GateVerdict v = verdict_from_outcome(ctx, kGate, run);
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

}  // namespace gauntlet::memory_gate
