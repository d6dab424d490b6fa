// Gate 10, memory: inputs unmodified, canaries intact, every output written, no uninitialized reads, ASan clean.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <regex>
#include <thread>

#include <unistd.h>

#include "gauntlet/build/builder.h"
#include "gauntlet/cases/gate.h"
#include "gauntlet/cases/judge.h"

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

// ---- compute-sanitizer (CUDA kernels) --------------------------------------------------------------

// The first error of a compute-sanitizer report (memcheck or initcheck), as one line.
struct SanitizerReport {
  bool found = false;       // an error the tool reported
  std::string kind;         // e.g. "Invalid __global__ write of size 4 bytes"
  std::string kernel;       // the device function, e.g. "relu_kernel" ("" for host API errors)
  std::string thread, block;  // e.g. "(0,0,0)"
  std::string where;        // e.g. "0 bytes after the end of a 4096-byte allocation"
  std::string message;      // "<tool>: kind in kernel (thread .. block ..), where"
  size_t offset = std::string::npos;  // where the error starts in the text
  int64_t errors = -1;      // the ERROR SUMMARY count; -1: no summary (the tool did not finish)
  std::string tool_error;   // the tool's own failure ("Error: ..." lines), not the kernel's
};

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

// Works on the raw text and on read_capture_tail's (newlines as spaces): every line of a report
// starts with "=========", so the text is cut there.
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

// compute-sanitizer: $GAUNTLET_COMPUTE_SANITIZER (a path; "none" turns the check off), else on PATH,
// else under /usr/local/cuda. "" when absent.
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

// The sanitizer's command line in front of the worker's. Reports go to its stdout (captured with
// the worker's); --error-exitcode only marks the exit, the report is parsed.
std::vector<std::string> sanitizer_command(const std::string& path, const std::string& tool, int timeout_s) {
  std::vector<std::string> cmd = {path, "--tool", tool, "--print-limit", "20", "--error-exitcode", "86",
                                  "--launch-timeout", std::to_string(timeout_s), "--require-cuda-init", "no",
                                  "--show-backtrace", "no"};
  if (tool == "memcheck") cmd.insert(cmd.end(), {"--padding", "512"});  // an overrun lands in padding, not a neighbour
  return cmd;
}

}  // namespace memory_gate

namespace {

constexpr const char* kGate = "memory";
// Two children poisoned differently: 0xA5 a finite value, the second NaN where it can be, so a
// result that reads memory nobody wrote differs between them.
constexpr uint8_t kPoisonA = 0xA5;
constexpr uint32_t kGuardBytes = 64;  // per side, per buffer: a multiple of c10's 64-byte alignment
// detect_leaks: LeakSanitizer stops the world with ptrace, which seccomp traps. symbolize: the
// symbolizer is an exec. The ASan child has no RLIMIT_DATA (shadow memory is terabytes of reserve).
constexpr const char* kAsanOptions =
    "ASAN_OPTIONS=detect_leaks=0:symbolize=0:halt_on_error=1:abort_on_error=0:allocator_may_return_null=1:"
    "detect_odr_violation=0:alloc_dealloc_mismatch=0:quarantine_size_mb=32:malloc_context_size=4";

// The second child's poison: 0xFF (NaN in every float dtype) where the worker can fill with any
// byte. The Python worker's CPU heap poison is glibc's M_PERTURB, which fills with value^0xFF and
// is off at value 0, so it cannot give 0xFF; there 0xFE (NaN in half, -1.7e38 in float, bfloat16).
uint8_t poison_b(const KernelManifest& m) { return is_python_module(m) && m.device == "cpu" ? 0xFE : 0xFF; }

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
    req.entry = python_load_entry(ctx.manifest, ctx.manifest.entry);
    req.build_dir = ctx.manifest.module_build_dir;  // a Python module's prebuilt extensions
    req.poison_byte = poison;
    req.guard_bytes = guard;
    set_load_device(ctx, &req);
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

// Whether two calls' outputs are the same bytes (count, shapes, dtypes, contents).
bool same_bytes(const wire::CallOutputs& a, const wire::CallOutputs& b) {
  if (a.outputs.size() != b.outputs.size()) return false;
  for (size_t i = 0; i < a.outputs.size(); ++i) {
    const at::Tensor x = a.outputs[i].contiguous(), y = b.outputs[i].contiguous();
    if (x.sizes() != y.sizes() || x.scalar_type() != y.scalar_type()) return false;
    if (std::memcmp(x.data_ptr(), y.data_ptr(), size_t(x.numel()) * size_t(x.element_size())) != 0) return false;
  }
  return true;
}

// Elements whose bytes differ between the two poisons; "" when every output agrees.
std::string compare_poisons(const GateContext& ctx, const wire::CallOutputs& a, const wire::CallOutputs& b,
                            nlohmann::json* evidence) {
  if (a.outputs.size() != b.outputs.size())
    return std::to_string(b.outputs.size()) + " outputs under poison " + hex(poison_b(ctx.manifest)) + ", " +
           std::to_string(a.outputs.size()) + " under " + hex(kPoisonA);
  for (size_t i = 0; i < a.outputs.size(); ++i) {
    const at::Tensor x = a.outputs[i].contiguous(), y = b.outputs[i].contiguous();
    if (x.sizes() != y.sizes() || x.scalar_type() != y.scalar_type())
      return output_name(ctx, i) + " has another shape or dtype under poison " + hex(poison_b(ctx.manifest));
    const size_t es = size_t(x.element_size());
    const auto* p = static_cast<const unsigned char*>(x.data_ptr());
    const auto* q = static_cast<const unsigned char*>(y.data_ptr());
    const uint8_t b_byte = poison_b(ctx.manifest);
    int64_t first = -1, count = 0, unwritten = 0, first_unwritten = -1;
    for (int64_t k = 0; k < x.numel(); ++k) {
      const unsigned char* u = p + size_t(k) * es;
      const unsigned char* w = q + size_t(k) * es;
      if (std::memcmp(u, w, es) == 0) continue;
      if (first < 0) first = k;
      ++count;
      bool sentinel = true;  // the poison byte in both: the allocator's, never overwritten
      for (size_t e = 0; e < es; ++e) sentinel = sentinel && u[e] == kPoisonA && w[e] == b_byte;
      if (sentinel && first_unwritten < 0) first_unwritten = k;
      unwritten += sentinel;
    }
    if (first < 0) continue;
    *evidence = {{"output", i}, {"differing_elements", count}, {"never_written", unwritten}, {"elements", x.numel()}};
    const std::string diff = std::to_string(count) + " of " + std::to_string(x.numel()) + " elements of " +
                             output_name(ctx, i) + " differ between allocator poisons " + hex(kPoisonA) + " and " +
                             hex(poison_b(ctx.manifest));
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
    auto b = open_child(ctx, ctx.launcher, poison_b(ctx.manifest), kGuardBytes, ctx.so_path, &failed);
    if (!b) return failed;
    std::vector<std::vector<at::Tensor>> inputs;
    for (const Case& c : cases) {
      GateVerdict v = check_case(ctx, *a, *b, c, &inputs.emplace_back());
      if (v.status != Status::Pass) return v;
    }
    a->finish();
    b->finish();
    if (ctx.manifest.device == "cuda") return check_cuda_sanitizers(ctx, cases, inputs);
    AsanChild asan;
    open_asan(ctx, asan);
    for (size_t k = 0; k < cases.size() && asan.session; ++k) {
      GateVerdict v = check_asan(ctx, asan, cases[k], inputs[k]);
      if (v.status != Status::Pass) return v;
    }
    GateVerdict v;
    v.name = kGate;
    v.cases = int(cases.size());
    if (is_python_module(ctx.manifest))  // the Python worker poisons the heap, and has no canaries
      v.message = std::to_string(cases.size()) + " cases: inputs bitwise unmodified, outputs identical under heap poisons " +
                  hex(kPoisonA) + " and " + hex(poison_b(ctx.manifest)) +
                  " (glibc M_PERTURB on blocks up to 32 MB: every element written, nothing uninitialized read); no "
                  "canaries around buffers in the Python worker; ";
    else
      v.message = std::to_string(cases.size()) + " cases: inputs bitwise unmodified, " + std::to_string(kGuardBytes) +
                  "-byte canaries around every buffer intact, outputs identical under allocator poisons " +
                  hex(kPoisonA) + " and " + hex(poison_b(ctx.manifest)) + " (every element written, nothing uninitialized read); ";
    v.message += asan.skipped.empty() ? "AddressSanitizer build clean on " + std::to_string(asan.cases) + " cases"
                                      : "AddressSanitizer sub-check skipped: " + asan.skipped;
    v.evidence = {{"cases", cases.size()}, {"guard_bytes", kGuardBytes}, {"asan_cases", asan.cases}};
    if (!asan.skipped.empty()) v.evidence["asan_skipped"] = asan.skipped;
    return v;
  }

  // device=cuda, after both poisoned children: memcheck, then initcheck, each in one fork+exec'd
  // child that compute-sanitizer starts, over every case; then the verdict, which says exactly what
  // was checked on the device.
  GateVerdict check_cuda_sanitizers(GateContext& ctx, const std::vector<Case>& cases,
                                    const std::vector<std::vector<at::Tensor>>& inputs) {
    std::vector<std::string> clean, skipped;
    const std::string path = memory_gate::find_compute_sanitizer();
    if (path.empty()) {
      skipped.push_back(std::getenv("GAUNTLET_COMPUTE_SANITIZER")
                            ? "compute-sanitizer turned off or not executable ($GAUNTLET_COMPUTE_SANITIZER)"
                            : "compute-sanitizer not found (PATH, /usr/local/cuda/bin)");
    } else {
      for (const char* tool : {"memcheck", "initcheck"}) {
        std::string why_skipped;
        GateVerdict v = run_sanitizer(ctx, path, tool, cases, inputs, &why_skipped);
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
    if (!skipped.empty()) v.evidence["sanitizer_skipped"] = skipped;
    return v;
  }

  // One compute-sanitizer tool over every case. Pass with *skipped set when the tool could not
  // judge (not the kernel's fault: it ran these cases in the plain children); fail on a report.
  GateVerdict run_sanitizer(GateContext& ctx, const std::string& path, const std::string& tool,
                            const std::vector<Case>& cases, const std::vector<std::vector<at::Tensor>>& inputs,
                            std::string* skipped) {
    SandboxOptions opts = ctx.launcher.options();
    opts.use_zygote = false;  // the sanitizer starts the worker: fork+exec
    opts.timeout_seconds = std::max(180, 4 * opts.timeout_seconds);  // instrumented kernels run slowly
    opts.exec_prefix = memory_gate::sanitizer_command(path, tool, opts.timeout_seconds);
    // No caching allocator: every tensor is its own cudaMalloc, so the tool knows each buffer's
    // bounds (an overrun inside a cached segment is invisible) and what was never written.
    opts.extra_env.push_back("PYTORCH_NO_CUDA_MEMORY_CACHING=1");
    opts.tool_ipc = true;
    // GAUNTLET_SANITIZER_RELAX (comma list) relaxes more for probing (tools/gpu/probe_sanitizer.sh):
    // "uid" keeps the uid, "seccomp" drops the filter, "ns" the namespaces.
    if (const char* relax = std::getenv("GAUNTLET_SANITIZER_RELAX")) {
      const std::string r = std::string(",") + relax + ",";
      if (r.find(",uid,") != std::string::npos) opts.drop_privileges = false;
      if (r.find(",seccomp,") != std::string::npos) opts.seccomp = false;
      if (r.find(",ns,") != std::string::npos) opts.namespaces = false;
    }
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
      const memory_gate::SanitizerReport r = memory_gate::parse_sanitizer_report(tool, text_now());
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
    const memory_gate::SanitizerReport r = memory_gate::parse_sanitizer_report(tool, text);
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
    GateVerdict v = verdict_from_outcome(ctx, kGate, run);
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
    ctx.timing.inputs += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    run.outcome = timed_call(ctx, a, c, run.inputs);
    if (run.outcome.kind != Outcome::Kind::Ok) return error_from(ctx, run, "allocator poison " + hex(kPoisonA));
    CaseRun second = run;
    second.outcome = timed_call(ctx, b, c, run.inputs);
    if (second.outcome.kind != Outcome::Kind::Ok) return error_from(ctx, second, "allocator poison " + hex(poison_b(ctx.manifest)));
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
    // No element holds the poisons: before blaming uninitialized memory, ask the first child
    // again. A kernel whose result varies from call to call differs between the children too.
    bool varies = false;
    if (evidence.value("never_written", int64_t(0)) == 0) {
      const Outcome again = timed_call(ctx, a, c, run.inputs);
      varies = again.kind == Outcome::Kind::Ok && !same_bytes(run.outcome.reply.calls.at(0), again.reply.calls.at(0));
    }
    GateVerdict v = failure(ctx, run, Category::WrongResult,
                            varies ? diff.substr(0, diff.find(": the result depends")) +
                                         ": the child poisoned " + hex(kPoisonA) +
                                         " gives another result when the same case is called again, so the result "
                                         "varies from call to call (nondeterminism, the determinism gate's finding); "
                                         "it is not shown to depend on uninitialized memory"
                                   : diff);
    v.evidence = evidence;
    if (varies) v.evidence["varies_between_calls"] = true;
    return v;
  }

  // Builds the ASan variant and starts its child; `skipped` says why when it cannot.
  static void open_asan(GateContext& ctx, AsanChild& out) {
    if (ctx.manifest.device != "cpu") return void(out.skipped = "not for CUDA kernels (compute-sanitizer runs instead)");
    if (is_python_module(ctx.manifest))
      return void(out.skipped = "not for Python modules: there is no native build to instrument (docs/modules.md)");
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
};

}  // namespace

std::unique_ptr<Gate> make_memory_gate() { return std::make_unique<MemoryGate>(); }

}  // namespace gauntlet
