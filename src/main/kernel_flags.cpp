// The kernel flags: a manifest built from a kernel.json or --op/--kernel, and the sandbox limits.
#include "kernel_flags.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "gauntlet/cases/gate.h"
#include "gauntlet/common/types.h"
#include "gauntlet/kernelbench/kernelbench.h"
#include "gauntlet/sandbox/gpu_slots.h"
#include "gauntlet/sandbox/gpu_turn.h"

namespace gauntlet {


std::optional<KernelManifest> manifest_from_flags(const VerifyFlags& f, std::string* error) {
  KernelManifest m;
  std::string source = f.source;
  const bool is_json = f.kernel.size() > 5 && f.kernel.substr(f.kernel.size() - 5) == ".json";
  if (!f.kernel.empty() && is_json) {
    auto loaded = load_manifest(f.kernel, error);
    if (!loaded) return std::nullopt;
    m = *loaded;
    // A flag that contradicts the manifest would verify another contract than the file declares.
    if (!f.op.empty() && f.op != m.op)
      return (*error = "--op " + f.op + " contradicts " + f.kernel + "'s op '" + m.op + "': give one of them", std::nullopt);
  } else if (!f.kernel.empty()) {
    source = f.kernel;
  }
  // A Python module without --op: its KernelBench problem's schema when mapped, else its own Model
  // as the oracle (op "module"; docs/modules.md).
  if (f.op.empty() && m.op.empty() && is_python_module(KernelManifest{"", source})) {
    auto found = kernelbench::manifest_for_module_file(source, error);
    if (!found) return std::nullopt;
    m = *found;
  }
  if (!source.empty()) m.source = source;
  if (!f.op.empty()) m.op = f.op;
  if (f.entry_given && !is_entry_name(f.entry)) return (*error = "--entry '" + f.entry + "' " + kEntryNameRule, std::nullopt);
  if (!f.entry.empty()) m.entry = f.entry;
  if (!f.device.empty()) m.device = f.device;
  if (m.op.empty()) return (*error = "no op: give a kernel.json or --op OP", std::nullopt);
  if (m.source.empty()) return (*error = "no kernel: give a kernel.json, a source file, or --kernel FILE", std::nullopt);
  if (m.device != "cpu" && m.device != "cuda") return (*error = "--device must be cpu or cuda", std::nullopt);
  // The source is bad input, not a build error of the kernel's, when it is not a readable file.
  struct stat st {};
  const std::string where = m.manifest_path.empty() ? "the kernel source " : m.manifest_path + ": field 'source': ";
  if (stat(m.source.c_str(), &st) != 0) return (*error = where + m.source + ": no such file", std::nullopt);
  if (S_ISDIR(st.st_mode)) return (*error = where + m.source + ": a directory, not a source file", std::nullopt);
  if (access(m.source.c_str(), R_OK) != 0) return (*error = where + m.source + ": not readable", std::nullopt);
  if (f.dtypes_given && f.dtypes.find_first_not_of(" ,") == std::string::npos)
    return (*error = "--dtypes '" + f.dtypes + "' names no dtype: give at least one (e.g. float32,float16)", std::nullopt);
  if (!f.dtypes.empty()) {
    m.dtypes.clear();
    std::string rest = f.dtypes;
    while (!rest.empty()) {
      std::string name = rest.substr(0, rest.find(','));
      rest = rest.find(',') == std::string::npos ? "" : rest.substr(rest.find(',') + 1);
      auto d = dtype_from_name(name);
      if (!d) return (*error = "unknown dtype '" + name + "'", std::nullopt);
      m.dtypes.push_back(*d);
    }
  }
  for (const std::string& kv : f.attrs) {
    std::string key;
    AttrValue v;
    if (!parse_attr_flag(kv, &key, &v, error)) return std::nullopt;
    m.attrs[key] = v;
    m.flag_fields.push_back("attrs/" + key);
  }
  if (!f.attrs.empty()) m.flag_fields.push_back("attrs");
  if (!f.layouts.empty()) {
    m.layouts.clear();
    for (const std::string& l : split_commas(f.layouts)) {
      if (!is_layout_name(l)) return (*error = "--layouts: unknown layout '" + l + "' (" + kLayoutNames + ")", std::nullopt);
      m.layouts.push_back(l);
    }
    m.flag_fields.push_back("layouts");
  }
  for (const std::string& g : f.equal_dims) {
    std::vector<std::string> group = split_commas(g);
    if (group.size() < 2) return (*error = "--equal-dims '" + g + "': name at least two dims, e.g. M,K,N", std::nullopt);
    m.equal_dims.push_back(group);
    m.flag_fields.push_back("equal_dims");
  }
  for (const std::string& r : f.ranks) {
    const size_t eq = r.find('=');
    std::vector<int64_t> ranks;
    if (eq != std::string::npos && eq > 0)
      for (const std::string& v : split_commas(r.substr(eq + 1))) {
        if (v.empty() || v.size() > 1 || v[0] < '0' || v[0] > '8') {
          ranks.clear();
          break;
        }
        ranks.push_back(v[0] - '0');
      }
    if (ranks.empty()) return (*error = "--rank '" + r + "': expected input=rank[,rank...] with ranks 0..8, e.g. x=2", std::nullopt);
    m.ranks[r.substr(0, eq)] = ranks;
    m.flag_fields.push_back("ranks/" + r.substr(0, eq));
  }
  if (!f.op.empty()) m.flag_fields.push_back("op");
  if (!f.dtypes.empty()) m.flag_fields.push_back("dtypes");
  return m;
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size() && !s.empty()) {
    size_t end = s.find(',', start);
    out.push_back(s.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

// --jobs: gate processes at once; 0 (the default) is one per online CPU, at most the twelve gates.
int gate_jobs(int flag) {
  if (flag > 0) return flag;
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  return int(std::clamp<long>(cpus, 1, 12));
}

// Below this no worker process loads LibTorch and a kernel: a smaller --memory-limit would make
// every correct kernel fail to load, so it is refused as a usage error.
constexpr int64_t kMinMemoryLimit = int64_t(128) << 20;

// "" when failing cases can be written under `dir` (an existing writable directory, or a path
// whose nearest existing ancestor is one); else why not. Checked before anything runs, so that a
// failure never goes without its replay file.
std::string replay_dir_problem(const std::string& dir, const std::string& flag) {
  if (dir.empty()) return flag + " is empty";
  std::string p = dir;
  struct stat st {};
  while (stat(p.c_str(), &st) != 0) {
    const size_t slash = p.find_last_of('/', p.size() > 1 ? p.size() - 2 : 0);
    if (slash == std::string::npos) { p = "."; continue; }
    p = slash == 0 ? "/" : p.substr(0, slash);
  }
  if (!S_ISDIR(st.st_mode))
    return flag + " " + dir + ": " + (p == dir ? "not a directory" : p + " is not a directory");
  if (access(p.c_str(), W_OK | X_OK) != 0) return flag + " " + dir + ": " + p + " is not writable";
  return "";
}

namespace {
// More than this many contexts starting at once is what start slots exist to prevent.
constexpr int kMaxStartSlots = 16;

// An integer setting from the environment: *out when `name` holds one in [lo, hi]; a one-line
// *error naming it and what was expected when it holds anything else; nothing when unset.
void env_count(const char* name, long lo, long hi, const std::string& expected, int* out, std::string* error) {
  const char* v = std::getenv(name);
  if (!v || !*v) return;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end != '\0' || n < lo || n > hi)
    *error = std::string(name) + "='" + v + "': expected " + expected;
  else
    *out = int(n);
}
}  // namespace

SandboxOptions sandbox_from(const VerifyFlags& f, std::string* error) {
  SandboxOptions s;
  s.timeout_seconds = f.timeout;
  s.memory_limit_bytes = parse_size(f.memory);
  if (s.memory_limit_bytes <= 0) *error = "--memory-limit: '" + f.memory + "' is not a size like 512M or 4G";
  else if (s.memory_limit_bytes < kMinMemoryLimit)
    *error = "--memory-limit " + f.memory + " is below " + std::to_string(kMinMemoryLimit >> 20) +
             "M: no worker loads a kernel and LibTorch in less";
  if (f.timeout <= 0) *error = "--timeout must be a positive number of seconds";
  s.use_zygote = !f.no_zygote;
  s.gpu_index = f.gpu;
  s.reference_threads = f.oracle_threads;
  s.module_load_seconds = f.build_timeout;
  s.gpu_turn_bound_seconds = f.gpu_turn_bound;
  // Measurement knobs, not flags (docs/gpu.md): how many cases share the GPU beside a spinner, how
  // many CUDA children may start CUDA at once.
  env_count("GAUNTLET_GPU_TURN_SLOTS", 1, GpuTurn::kMaxSlots, "a number of turn slots from 1 to " +
            std::to_string(GpuTurn::kMaxSlots), &s.gpu_turn_slots_while_overrun, error);
  env_count("GAUNTLET_GPU_START_SLOTS", 0, kMaxStartSlots, "how many CUDA children may start at once, "
            "0 (no limit) to " + std::to_string(kMaxStartSlots), &s.gpu_start_slots, error);
  env_count("GAUNTLET_GPU_GATE_SLOTS", 0, GpuSlot::kMaxSlots, "how many CUDA gates of the GPU may run at once, "
            "0 (each process's own --gpu-jobs) to " + std::to_string(GpuSlot::kMaxSlots), &s.gpu_gate_slots, error);
  if (uint32_t queues = 0; !concurrent_gate_queues_from_env(&queues, error)) return s;
  if (f.gpu < 0) *error = "--gpu must be a GPU index, 0 or more";
  return s;
}

void add_kernel_flags(CLI::App* c, VerifyFlags& f) {
  // Upper case: CLI11 2.4 (Ubuntu 24.04) refuses a positional named like the --kernel option.
  c->add_option("KERNEL", f.kernel, "kernel.json manifest, or a kernel source file (with --op)");
  c->add_option("--op", f.op, "op schema name (e.g. softmax)");
  c->add_option("--kernel", f.source, "kernel source file (.cpp or .cu)");
  c->add_option("--entry", f.entry, "entry function name (default: forward)")->each([&f](const std::string&) { f.entry_given = true; });
  c->add_option("--device", f.device, "cpu or cuda (default: cpu)");
  c->add_option("--dtypes", f.dtypes, "comma-separated dtypes the kernel supports")->each([&f](const std::string&) { f.dtypes_given = true; });
  c->add_option("--attr", f.attrs, "fixed attribute value, name=value (repeatable)");
  c->add_option("--layouts", f.layouts, "comma-separated input layouts the kernel accepts (e.g. contiguous); others must be refused or right");
  c->add_option("--equal-dims", f.equal_dims, "dims the kernel needs equal, e.g. M,K,N for a square-only matmul (repeatable)");
  c->add_option("--rank", f.ranks, "ranks an input may have, input=rank[,rank] (repeatable)");
  c->add_option("--timeout", f.timeout, "wall-clock seconds per case sent to a gate process (default 60)");
  c->add_option("--memory-limit", f.memory, "host memory per gate process, e.g. 512M, 4G (default 4G)");
  c->add_option("--gpu", f.gpu, "index of the GPU a CUDA kernel's children use (default 0)");
  c->add_flag("--no-zygote", f.no_zygote, "fork+exec a fresh worker per gate instead of forking the zygote");
}

}  // namespace gauntlet
