// The memory gate's compute-sanitizer sub-check (CUDA kernels): memcheck and initcheck over every case.
#include "memory_sanitizer.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <regex>
#include <thread>

#include <unistd.h>

#include "memory_children.h"

namespace gauntlet::memory_gate {

namespace {
std::string collapse(const std::string& s) {
  std::string out;
  for (char c : s) {
    const bool space = c == ' ' || c == '\n' || c == '\r' || c == '\t';
    if (space && (out.empty() || out.back() == ' ')) continue;
    out += space ? ' ' : c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}
std::string digits(std::string s) {
  s.erase(std::remove(s.begin(), s.end(), ','), s.end());
  return s;
}
}  // namespace

SanitizerReport parse_sanitizer_report(const std::string& tool, const std::string& text) {
  SanitizerReport r;
  static const std::regex memory_error(
      R"(^((Invalid|Misaligned|Out-of-range)\b.*|Uninitialized __.*|Host API memory access error.*))");
  static const std::regex api_error(R"(^Program hit .*)");
  static const std::regex summary(R"(^ERROR SUMMARY: ([\d,]+) error)");
  static const std::regex at_fn(R"(^at (?:0x[0-9a-fA-F]+ in )?(.*?)(\+0x[0-9a-fA-F]+.*)?$)");
  static const std::regex thread(R"(^by thread (\(\d+,\d+,\d+\)) in block (\(\d+,\d+,\d+\)))");
  static const std::regex nearest(R"(and is ([\d,]+) bytes (after|before) the nearest allocation at 0x[0-9a-fA-F]+ of size ([\d,]+) bytes?)");
  static const std::regex inside(R"(and is inside the nearest allocation at 0x[0-9a-fA-F]+ of size ([\d,]+) bytes?)");
  static const std::regex bounds(R"(^(?:Address|Access at|Access to) 0x[0-9a-fA-F]+ is (out of bounds|misaligned))");
  static const std::regex uninit_by(R"(^Uninitialized access at 0x[0-9a-fA-F]+ on access by (.*))");
  // Pieces between "=========" markers, with their offsets.
  std::vector<std::pair<size_t, std::string>> pieces;
  const std::string mark = "=========";
  for (size_t pos = text.find(mark); pos != std::string::npos;) {
    size_t start = pos + mark.size();
    while (start < text.size() && text[start] == '=') ++start;
    const size_t next = text.find(mark, start);
    pieces.emplace_back(pos, collapse(text.substr(start, next == std::string::npos ? std::string::npos : next - start)));
    pos = next;
  }
  std::smatch m;
  int first = -1, first_api = -1;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const std::string& p = pieces[i].second;
    if (std::regex_search(p, m, summary)) r.errors = std::stoll(digits(m[1]));
    else if (p.rfind("Error:", 0) == 0 && r.tool_error.empty() && p.find("didn't terminate successfully") == std::string::npos)
      r.tool_error = p;
    else if (first < 0 && std::regex_search(p, memory_error)) first = int(i);
    else if (first_api < 0 && std::regex_search(p, api_error)) first_api = int(i);
  }
  if (first < 0) first = first_api;  // a failed CUDA call (an illegal address seen at the next sync)
  if (first < 0) return r;
  r.found = true;
  r.offset = pieces[size_t(first)].first;
  r.kind = pieces[size_t(first)].second;
  for (size_t i = size_t(first) + 1; i < pieces.size(); ++i) {
    const std::string& p = pieces[i].second;
    if (std::regex_search(p, memory_error) || std::regex_search(p, api_error) || std::regex_search(p, summary)) break;
    if (r.kernel.empty() && std::regex_search(p, m, at_fn)) {
      std::string fn = m[1];
      if (fn.rfind("void ", 0) == 0) fn = fn.substr(5);
      const size_t paren = fn.find('(');
      r.kernel = paren == std::string::npos ? fn : fn.substr(0, paren);
    } else if (r.thread.empty() && std::regex_search(p, m, thread)) {
      r.thread = m[1];
      r.block = m[2];
    } else if (std::regex_search(p, m, nearest)) {
      r.where = digits(m[1]) + " bytes " + (m[2] == "after" ? "after the end" : "before the start") + " of a " +
                digits(m[3]) + "-byte allocation";
    } else if (std::regex_search(p, m, inside)) {
      r.where = "inside a " + digits(m[1]) + "-byte allocation";
    } else if (r.where.empty() && std::regex_search(p, m, bounds)) {
      r.where = std::string(m[1]) == "misaligned" ? "misaligned address" : "out of bounds of every allocation";
    } else if (std::regex_search(p, m, uninit_by)) {
      r.where = "uninitialized bytes read by " + std::string(m[1]);
    }
  }
  r.message = tool + ": " + r.kind;
  if (!r.kernel.empty()) r.message += " in " + r.kernel;
  if (!r.thread.empty()) r.message += " (thread " + r.thread + " block " + r.block + ")";
  if (!r.where.empty()) r.message += ", " + r.where;
  return r;
}

std::string find_compute_sanitizer() {
  if (const char* env = std::getenv("GAUNTLET_COMPUTE_SANITIZER"); env && *env)
    return std::string(env) == "none" || access(env, X_OK) != 0 ? "" : env;
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("PATH")) {
    std::string p = path;
    for (size_t a = 0, b; a <= p.size(); a = b + 1) {
      b = p.find(':', a);
      if (b == std::string::npos) b = p.size();
      if (b > a) dirs.push_back(p.substr(a, b - a));
    }
  }
  dirs.push_back("/usr/local/cuda/bin");
  dirs.push_back("/usr/local/cuda/compute-sanitizer");
  for (const std::string& d : dirs) {
    const std::string f = d + "/compute-sanitizer";
    if (access(f.c_str(), X_OK) == 0) return f;
  }
  return "";
}

std::vector<std::string> sanitizer_command(const std::string& path, const std::string& tool, int timeout_s) {
  std::vector<std::string> cmd = {path, "--tool", tool, "--print-limit", "20", "--error-exitcode", "86",
                                  "--launch-timeout", std::to_string(timeout_s), "--require-cuda-init", "no",
                                  "--show-backtrace", "no"};
  if (tool == "memcheck") cmd.insert(cmd.end(), {"--padding", "512"});  // an overrun lands in padding, not a neighbour
  return cmd;
}

std::unique_ptr<FileLock> sanitizer_turn(bool shares_host_network, const std::string& lock_path, double* waited_seconds) {
  auto lock = std::make_unique<FileLock>();
  *waited_seconds = 0;
  const char* rule = std::getenv("GAUNTLET_SANITIZER_SHARED_NETWORK");
  if (!shares_host_network || (rule && std::string(rule) == "concurrent")) return lock;
  const auto asked = std::chrono::steady_clock::now();
  lock->lock(lock_path, FileLock::Mode::Exclusive);  // unopenable: run unserialized rather than not at all
  *waited_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count();
  return lock;
}

namespace {

// The host-wide sanitizer turns this gate's children took (sanitizer_turn).
struct SharedNetworkTurns {
  bool taken = false;
  double waited_seconds = 0;
};

// One compute-sanitizer tool over every case. Pass with *skipped set when the tool could not
// judge (not the kernel's fault: it ran these cases in the plain children); fail on a report.
GateVerdict run_sanitizer(GateContext& ctx, const std::string& path, const std::string& tool,
                          const std::vector<Case>& cases, const std::vector<std::vector<at::Tensor>>& inputs,
                          std::string* skipped, SharedNetworkTurns* shared) {
  SandboxOptions opts = ctx.launcher.options();
  opts.use_zygote = false;  // the sanitizer starts the worker: fork+exec
  opts.timeout_seconds = std::max(180, 4 * opts.timeout_seconds);  // instrumented kernels run slowly
  opts.exec_prefix = sanitizer_command(path, tool, opts.timeout_seconds);
  // No caching allocator: every tensor is its own cudaMalloc, so the tool knows each buffer's
  // bounds (an overrun inside a cached segment is invisible) and what was never written.
  opts.extra_env.push_back("PYTORCH_NO_CUDA_MEMORY_CACHING=1");
  // No preloading of the kernel's functions (kernel_preload.h): the tool reports every CUDA call
  // that returns an error, and asking about symbols that are not kernels returns one each.
  opts.extra_env.push_back("GAUNTLET_CUDA_PRELOAD=0");
  opts.tool_ipc = true;
  // GAUNTLET_SANITIZER_RELAX (comma list) relaxes more for probing (tools/gpu/probe_sanitizer.sh):
  // "uid" keeps the uid, "seccomp" drops the filter, "ns" the namespaces.
  if (const char* relax = std::getenv("GAUNTLET_SANITIZER_RELAX")) {
    const std::string r = std::string(",") + relax + ",";
    if (r.find(",uid,") != std::string::npos) opts.drop_privileges = false;
    if (r.find(",seccomp,") != std::string::npos) opts.seccomp = false;
    if (r.find(",ns,") != std::string::npos) opts.namespaces = false;
  }
  // Declared before the launcher, so held until its children are reaped.
  double waited = 0;
  const std::unique_ptr<FileLock> turn =
      sanitizer_turn(ctx.launcher.children_share_host_network() || !opts.namespaces, kSanitizerSharedNetworkLock, &waited);
  if (turn->held()) shared->taken = true, shared->waited_seconds += waited;
  Launcher launcher(opts);
  const int64_t t0 = wire::now_ms();
  std::string error;
  std::unique_ptr<WorkerSession> s = launcher.spawn(&error);
  ctx.timing.spawn += double(wire::now_ms() - t0) / 1000.0;
  ++ctx.timing.children;
  if (!s) return (*skipped = "cannot start it: " + error, passed());
  wire::LoadRequest req;
  req.so_path = ctx.so_path;
  req.entry = python_load_entry(ctx.manifest, ctx.manifest.entry);
  req.build_dir = ctx.manifest.module_build_dir;  // a Python module's prebuilt extensions
  req.poison_byte = kPoisonA;
  set_load_device(ctx, &req);
  auto text_now = [&] { return s->captured_output(size_t(1) << 24); };
  Outcome o = s->load(req);
  if (o.kind != Outcome::Kind::Ok) {
    const SanitizerReport r = parse_sanitizer_report(tool, text_now());
    *skipped = "the worker did not load under it: " + o.message + (r.tool_error.empty() ? "" : " (" + r.tool_error + ")");
    return passed();
  }
  // Where each case's output starts: a report is blamed on the case running when it was printed.
  std::vector<size_t> starts;
  size_t failed_case = cases.size();
  CaseRun failed_run;
  for (size_t k = 0; k < cases.size(); ++k) {
    starts.push_back(text_now().size());
    CaseRun run;
    run.c = cases[k];
    run.inputs = inputs[k];
    run.outcome = timed_call(ctx, *s, cases[k], inputs[k]);
    if (run.outcome.kind != Outcome::Kind::Ok) {
      failed_case = k;
      failed_run = run;
      break;
    }
  }
  s->finish();
  // The tool prints its ERROR SUMMARY when the worker has exited.
  std::string text = text_now();
  // A child killed after a failed case (a dead CUDA context) prints no summary: wait less for it.
  const int64_t wait_ms = failed_case < cases.size() ? 5000 : 60000;
  for (int64_t until = wire::now_ms() + wait_ms; text.find("ERROR SUMMARY") == std::string::npos && wire::now_ms() < until;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    text = text_now();
  }
  const SanitizerReport r = parse_sanitizer_report(tool, text);
  if (r.found) {
    size_t k = 0;
    while (k + 1 < starts.size() && starts[k + 1] <= r.offset) ++k;
    CaseRun run;
    run.c = cases[k];
    run.inputs = inputs[k];
    run.outcome = failed_case == k ? failed_run.outcome : Outcome{};
    // An invalid access is memory-unsafe whatever the values (crash, as for ASan); a read of
    // memory nobody wrote makes the result depend on garbage (wrong-result).
    GateVerdict v = failure(ctx, run, tool == "memcheck" ? Category::Crash : Category::WrongResult,
                            r.message + " (compute-sanitizer " + tool + ", " +
                                (r.errors > 0 ? std::to_string(r.errors) + " errors in all" : "errors counted: none") + ")");
    v.evidence = {{"sanitizer", tool}, {"sanitizer_kind", r.kind}, {"sanitizer_kernel", r.kernel},
                  {"sanitizer_where", r.where}, {"sanitizer_errors", r.errors}};
    return v;
  }
  if (failed_case < cases.size())
    *skipped = "case " + cases[failed_case].label + " failed under it without a report (" + failed_run.outcome.message + ")";
  else if (!r.tool_error.empty())
    *skipped = r.tool_error;
  else if (r.errors < 0)
    *skipped = "it printed no ERROR SUMMARY within 60 s of the worker's exit";
  return passed();
}

}  // namespace

GateVerdict check_cuda_sanitizers(GateContext& ctx, const std::vector<Case>& cases,
                                  const std::vector<std::vector<at::Tensor>>& inputs) {
  std::vector<std::string> clean, skipped;
  SharedNetworkTurns shared;
  const std::string path = find_compute_sanitizer();
  if (path.empty()) {
    skipped.push_back(std::getenv("GAUNTLET_COMPUTE_SANITIZER")
                          ? "compute-sanitizer turned off or not executable ($GAUNTLET_COMPUTE_SANITIZER)"
                          : "compute-sanitizer not found (PATH, /usr/local/cuda/bin)");
  } else {
    for (const char* tool : {"memcheck", "initcheck"}) {
      std::string why_skipped;
      GateVerdict v = run_sanitizer(ctx, path, tool, cases, inputs, &why_skipped, &shared);
      if (v.status != Status::Pass) return v;
      if (why_skipped.empty()) clean.push_back(std::string(tool) + " clean on " + std::to_string(cases.size()) + " cases");
      else skipped.push_back(std::string(tool) + " skipped: " + why_skipped);
    }
  }
  GateVerdict v;
  v.name = kGate;
  v.cases = int(cases.size());
  v.message = std::to_string(cases.size()) +
              " cases on the GPU: inputs bitwise unmodified (device storage copied back); outputs identical under "
              "poisons " + hex(kPoisonA) + " and " + hex(poison_b(ctx.manifest)) +
              ", written over the CUDA caching allocator's free memory before each call (every output element "
              "written, nothing uninitialized read, for buffers the kernel takes from LibTorch's allocator; "
              "cudaMalloc'd and static device memory is not poisoned); no canaries on device buffers "
              "(host-side only); ";
  std::string san;
  for (const std::string& c : clean) san += (san.empty() ? "" : ", ") + c;
  for (const std::string& k : skipped) san += (san.empty() ? "" : "; ") + k;
  v.message += "compute-sanitizer: " + san;
  v.evidence = {{"cases", cases.size()}, {"device_poison", true}, {"sanitizers_clean", clean}};
  if (shared.taken) {
    v.message += " (one sanitizer at a time host-wide: the children share the host's network namespace)";
    v.evidence["sanitizer_one_at_a_time"] = {{"why", "the children share the host's network namespace"},
                                             {"waited_seconds", shared.waited_seconds}};
  }
  if (!skipped.empty()) v.evidence["sanitizer_skipped"] = skipped;
  return v;
}

}  // namespace gauntlet::memory_gate
