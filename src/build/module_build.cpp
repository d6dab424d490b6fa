// A Python module's build step: its extensions compiled once, by one sandboxed child, in a directory of its own.
#include "gauntlet/build/module_build.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <optional>
#include <nlohmann/json.hpp>

#include "gauntlet/build/build_cache.h"
#include "gauntlet/sandbox/file_lock.h"
#include "gauntlet/version.h"

namespace gauntlet {
namespace {

constexpr const char* kRecord = "gauntlet-build.json";         // success: what gate children load
constexpr const char* kFailure = "gauntlet-build-failed.json";  // a compile error, cached like one

// gcc's and the kernel's words for a compiler that could not get memory: the build child's limit,
// not a compile error.
bool compiler_ran_out_of_memory(const std::string& log) {
  std::string lower = log;
  for (char& ch : lower) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  for (const char* sign : {"virtual memory exhausted", "cannot allocate memory", "out of memory allocating",
                           "internal compiler error: killed", "killed signal terminated program"})
    if (lower.find(sign) != std::string::npos) return true;
  return false;
}

std::string getenv_or(const char* name, const std::string& fallback) {
  const char* v = getenv(name);
  return v && *v ? v : fallback;
}

// torch's version file beside the interpreter's torch, found without importing torch (that takes
// seconds): the toolchain identity changes when torch is upgraded in place.
std::string torch_identity(const std::string& python) {
  for (const char* dir : {"/usr/lib/python3/dist-packages/torch", "/usr/local/lib/python3/dist-packages/torch"}) {
    const std::string v = std::string(dir) + "/version.py";
    if (access(v.c_str(), R_OK) == 0 && python.rfind("/usr/bin/", 0) == 0) return build_internal::file_identity(v);
  }
  // Other interpreters (a venv, the GPU host's python3): torch's path as that interpreter sees it.
  std::string cmd = python + " -c 'import importlib.util as u; s = u.find_spec(\"torch\"); print(s.origin if s else \"\")' 2>/dev/null";
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[PATH_MAX];
    if (fgets(buf, sizeof buf, p)) out = buf;
    pclose(p);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  if (out.empty()) return "no-torch";
  const std::string dir = out.substr(0, out.rfind('/'));
  return build_internal::file_identity(dir + "/version.py");
}

const std::string& toolchain_identity(bool cuda) {
  static std::mutex mu;
  static std::string cpu_id, cuda_id;
  std::lock_guard<std::mutex> lock(mu);
  std::string& id = cuda ? cuda_id : cpu_id;
  if (!id.empty()) return id;
  std::vector<std::string> argv;
  std::string error, python = "python3", worker;
  if (python_worker_command("", &argv, &error)) python = argv[0], worker = argv[1];
  id = "python=" + build_internal::file_identity(python) + "\ntorch=" + torch_identity(python);
  // The worker's code decides where and how extensions are built: every .py file beside the
  // worker script and in the folders below it (a package split across files), sorted by path.
  const std::string dir = worker.substr(0, worker.rfind('/') + 1);
  std::vector<std::string> sources;
  std::error_code ec;
  for (std::filesystem::recursive_directory_iterator it(dir.empty() ? "." : dir, ec), end; !ec && it != end;
       it.increment(ec))
    if (it->is_regular_file(ec) && it->path().extension() == ".py") sources.push_back(it->path().string());
  std::sort(sources.begin(), sources.end());
  id += "\nbuild-code=";
  for (const std::string& f : sources) id += f.substr(dir.size()) + ":" + sha256_file_hex(f) + ",";
  id += "\ncxx=" + build_internal::file_identity(build_internal::resolve_executable("c++"));
  if (cuda) id += "\nnvcc=" + build_internal::file_identity(build_internal::resolve_executable("nvcc"));
  return id;
}

bool read_json(const std::string& path, nlohmann::json* out) {
  std::string bytes, error;
  if (!build_internal::read_file(path, &bytes, &error)) return false;
  *out = nlohmann::json::parse(bytes, nullptr, false);
  return out->is_object();
}

// After the build the directory is the parent's again and nobody's children can only read it.
void seal(const std::string& dir) {
  std::error_code ec;
  const bool root = geteuid() == 0;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    const std::string p = it->path().string();
    if (root && lchown(p.c_str(), 0, 0) != 0) continue;
    struct stat st;
    if (lstat(p.c_str(), &st) == 0 && !S_ISLNK(st.st_mode)) chmod(p.c_str(), (st.st_mode & 0755) | 0444);
  }
  if (root && chown(dir.c_str(), 0, 0) != 0) return;
  chmod(dir.c_str(), 0755);
}

BuildResult from_record(BuildResult b, const std::string& dir, const nlohmann::json& rec, bool failed) {
  b.module_dir = dir;
  if (failed) {
    b.ok = false;
    b.error = rec.value("error", std::string("the module's extensions did not build"));
    b.log_head = rec.value("log_head", std::string());
  }
  return b;
}

// The precompiled torch/extension.h headers offered to a module's load_inline builds
// (python/gauntlet_worker/pch.py): built once per toolchain and variant (extra g++ flags a module
// passes, "" for none), by the Python worker run outside any sandbox (it runs no kernel code, and
// pch.py takes only flags that touch code generation), under the module build root. A failure is
// remembered beside it, so that it is tried once, not once per module; builds then go without
// (slower, same result).
constexpr size_t kMaxPchVariants = 4;  // each .gch is 0.6-0.7 GB

// Where the headers live: $GAUNTLET_PCH_ROOT, else beside the module builds (the tests give each
// test its own module builds but share one header, which takes half a minute to build).
std::string pch_root() { return getenv_or("GAUNTLET_PCH_ROOT", module_builds_root()); }

std::string pch_prefix(bool cuda) {
  std::string id = toolchain_identity(cuda);
  // Not the worker's other code: an edit elsewhere in python/ must not rebuild a 35 s header.
  const size_t code = id.find("\nbuild-code=");
  if (code != std::string::npos) id.erase(code, id.find('\n', code + 1) - code);
  std::vector<std::string> argv;
  std::string error;
  if (python_worker_command("", &argv, &error))
    id += "\npch-code=" + sha256_file_hex(argv[1].substr(0, argv[1].rfind('/') + 1) + "gauntlet_worker/pch.py");
  return pch_root() + "/torch-pch-" + sha256_hex("gauntlet-torch-pch-v1\n" + id + (cuda ? "\ncuda" : "\ncpu")).substr(0, 16);
}

std::string pch_header_of(const std::string& dir) { return dir + "/gauntlet_torch_extension.h"; }

// Builds the variant's header when it is missing (under a lock across processes); its directory.
std::string build_pch_variant(bool cuda, const std::string& variant, std::string* note) {
  const std::string dir = pch_prefix(cuda) + "-" + sha256_hex(variant).substr(0, 12);
  const std::string header = pch_header_of(dir);
  auto built = [&] { return access((header + ".gch").c_str(), R_OK) == 0; };
  std::string failed, error;
  if (built()) return dir;
  if (build_internal::read_file(dir + ".failed", &failed, &error)) return (*note = failed, "");
  FileLock lock(dir + ".lock", FileLock::Mode::Exclusive);
  if (built()) return dir;
  std::vector<std::string> argv;
  if (!python_worker_command("", &argv, &error)) return (*note = error, "");
  if (argv[0].find('/') == std::string::npos) argv[0] = build_internal::resolve_executable(argv[0]);
  argv.insert(argv.end(), {"--pch", dir, cuda ? "cuda" : "cpu"});
  for (size_t at = 0, end; at < variant.size(); at = end + 1) {  // the flags, space-separated
    end = variant.find(' ', at);
    if (end == std::string::npos) end = variant.size();
    if (end > at) argv.push_back(variant.substr(at, end - at));
  }
  const build_internal::ProcResult r = build_internal::run_process(argv, dir + ".log", 900);
  if (r.spawned && !r.timed_out && r.exit_code == 0 && built()) return dir;
  std::string tail = r.output.size() > 400 ? r.output.substr(r.output.size() - 400) : r.output;
  for (char& c : tail) if (c == '\n') c = ' ';
  *note = "no precompiled torch/extension.h for flags '" + variant + "' (" + (r.timed_out ? "timed out" : "failed") + "): " + tail;
  // Remembered only when g++ or torch said no; a build killed from outside (an interrupted audit)
  // is tried again next time.
  if (r.spawned && !r.timed_out && r.term_signal == 0) build_internal::write_file_atomic(dir + ".failed", *note);
  return "";
}

// Whether builds make the headers they lack (an audit) or only take those already there (verify:
// a lone module would wait half a minute for a header that saves it nothing).
std::atomic<bool> g_pch_on_demand{false};

bool pch_disabled() {
  const char* v = getenv("GAUNTLET_PCH");
  return v && std::string(v) == "0";
}

// {variant: header} of every header built for this toolchain; the plain one built first when
// missing and builds make headers.
nlohmann::json offered_pch_headers(bool cuda, std::string* note) {
  static std::mutex mu;
  std::lock_guard<std::mutex> guard(mu);
  nlohmann::json headers = nlohmann::json::object();
  if (pch_disabled()) return (*note = "no precompiled header: GAUNTLET_PCH=0", headers);
  char real[PATH_MAX];
  std::string error;
  if (!build_internal::make_dirs(pch_root(), &error)) return (*note = "no precompiled header: " + error, headers);
  if (realpath(pch_root().c_str(), real) && (std::string(real) + "/").rfind("/tmp/", 0) == 0)
    return (*note = "no precompiled header: GAUNTLET_PCH_ROOT is under /tmp, which no build child sees", headers);
  chmod(pch_root().c_str(), 0755);
  if (g_pch_on_demand.load()) build_pch_variant(cuda, "", note);
  const std::string prefix = pch_prefix(cuda) + "-";
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(pch_root(), ec)) {
    const std::string p = e.path().string();
    nlohmann::json rec;
    if (p.rfind(prefix, 0) == 0 && e.is_directory(ec) && read_json(p + "/flags.json", &rec) &&
        access((pch_header_of(p) + ".gch").c_str(), R_OK) == 0)
      headers[rec.value("variant", std::string())] = pch_header_of(p);
  }
  return headers;
}

// After a build: the variants its load_inline calls wanted and found no header for, built now for
// the modules after it (at most kMaxPchVariants in all).
void build_wanted_pch_variants(bool cuda, const nlohmann::json& wanted) {
  if (!wanted.is_array() || !g_pch_on_demand.load() || pch_disabled()) return;
  std::string note;
  for (const auto& w : wanted) {
    if (!w.is_string() || w.get<std::string>().size() > 600) continue;
    if (offered_pch_headers(cuda, &note).size() >= kMaxPchVariants) return;
    build_pch_variant(cuda, w.get<std::string>(), &note);
  }
}

// One build_python_module call: the module, the result it fills, and what its steps hand on. A step
// returns the build's result when it ends the build, nullopt to go on.
struct ModuleBuild {
  const KernelManifest& manifest;
  Launcher& launcher;
  const std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  BuildResult b;
  std::string error;         // what the last failing call said (a harness message's reason)
  char resolved[PATH_MAX];   // the module's real path
  std::string dir;           // its build directory, under module_builds_root()
  bool cuda = false;
  bool inline_builds = false;  // it calls load_inline
  std::string pch_note;        // why it was offered no precompiled header, if so
  Outcome o;                   // the build child's load
  std::string signature;       // the child's record of what it built (o.kind Ok)

  ModuleBuild(const KernelManifest& manifest, Launcher& launcher) : manifest(manifest), launcher(launcher) {
    b.prelude = "python-module";
  }

  // gauntlet's own failure, not the module's (harness-error).
  BuildResult harness(const std::string& why) {
    b.ok = false;
    b.harness_fault = true;
    // A child's own harness error already says "harness:": said once.
    const std::string said = why.rfind("harness: ", 0) == 0 ? why.substr(9) : why;
    b.error = "harness: the module's build step: " + said;
    return b;
  }

  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); }

  // The module's real path and hash, its key, and its directory under the builds root.
  std::optional<BuildResult> choose_dir() {
    if (!realpath(manifest.source.c_str(), resolved)) {
      b.error = "cannot resolve the module path " + manifest.source;
      return b;
    }
    b.so_path = resolved;
    b.source_hash = sha256_file_hex(resolved);
    b.cache_key = module_build_key(manifest, &error);
    if (b.cache_key.empty()) return harness(error);
    const std::string root = module_builds_root();
    if (!build_internal::make_dirs(root, &error)) return harness("cannot create " + root + ": " + error);
    char root_real[PATH_MAX];
    if (realpath(root.c_str(), root_real) && (std::string(root_real) + "/").rfind("/tmp/", 0) == 0)
      return harness("GAUNTLET_MODULE_BUILDS is under /tmp (" + std::string(root_real) +
                     "), which every sandboxed child sees as its own private, empty /tmp: choose another directory");
    chmod(root.c_str(), 0755);  // the gate children (nobody) must reach their module's directory
    dir = root + "/" + b.cache_key.substr(0, 32);
    return std::nullopt;
  }

  // An earlier build's record under the key (its success or its compile error): the result at once.
  std::optional<BuildResult> cached() {
    nlohmann::json rec;
    b.ok = true;
    if (read_json(dir + "/" + kRecord, &rec) || read_json(dir + "/" + kFailure, &rec)) {
      b.cache_hit = true;
      b = from_record(b, dir, rec, !read_json(dir + "/" + kRecord, &rec));
      b.seconds = seconds();
      return b;
    }
    return std::nullopt;
  }

  // The directory emptied for the build child, with the precompiled headers a load_inline build may use.
  std::optional<BuildResult> prepare_dir() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);  // a build killed half way leaves no record: start over
    if (!build_internal::make_dirs(dir, &error)) return harness("cannot create " + dir + ": " + error);
    // The build child may be nobody (root dropped) or the parent's uid (a user namespace maps its
    // root there): either must write here, until seal() gives the directory back, read-only.
    chmod(dir.c_str(), 0777);
    // A module that calls load_inline is offered the precompiled torch/extension.h (its C++ unit
    // then compiles in about 40% of the time). The child reads this record before its sandbox.
    std::string module_text;
    cuda = manifest.device == "cuda";
    // CUDA modules too: with the light torch headers their nvcc unit takes about as long as main.cpp
    // without the header (docs/modules.md, "Builds"), so both must shrink for a build to.
    inline_builds = build_internal::read_file(resolved, &module_text, &error) &&
                    module_text.find("load_inline") != std::string::npos;
    if (inline_builds) {
      const nlohmann::json headers = offered_pch_headers(cuda, &pch_note);
      if (!headers.empty()) build_internal::write_file_atomic(dir + "/gauntlet-pch.json", nlohmann::json{{"headers", headers}}.dump());
    }
    return std::nullopt;
  }

  // The build child imports and constructs the module, compilers allowed, writing into dir only.
  std::optional<BuildResult> load_in_build_child() {
    std::unique_ptr<WorkerSession> session = launcher.spawn(&error);
    if (!session) return harness("cannot start the build child: " + error);
    wire::LoadRequest req;
    req.so_path = resolved;
    const std::string cand = manifest.entry.empty() || manifest.entry == "forward" ? "ModelNew" : manifest.entry;
    req.entry = python_load_entry(manifest, "build:" + cand);
    req.device = manifest.device;
    req.build_dir = dir;
    o = session->load(req);
    signature = o.kind == Outcome::Kind::Ok ? session->signature() : "";
    session.reset();
    b.seconds = seconds();
    return std::nullopt;
  }

  // What the load says, recorded under the key where it would hold again, and the result.
  BuildResult record_outcome() {
    std::error_code ec;
    nlohmann::json out = {{"key", b.cache_key}, {"source", resolved}, {"seconds", b.seconds},
                          {"gauntlet", GAUNTLET_VERSION_STRING}};
    if (o.kind == Outcome::Kind::Ok) {
      const nlohmann::json built = nlohmann::json::parse(signature, nullptr, false);
      if (!built.is_object() || !built.contains("extensions") || !built["extensions"].is_array())
        return harness("the build child's record is malformed (" + signature.substr(0, 120) + ")");
      // What the child says it built must be on this side of its sandbox.
      for (const auto& e : built["extensions"])
        if (e.is_object() && e.contains("file") && e["file"].is_string() && access(e["file"].get<std::string>().c_str(), R_OK) != 0)
          return harness("the build child reported " + e["file"].get<std::string>() + ", which is not there");
      out["extensions"] = built["extensions"];
      out["torch"] = built.value("torch", "");
      if (!pch_note.empty()) out["pch_note"] = pch_note;
      if (!build_internal::write_file_atomic(dir + "/" + kRecord, out.dump(1)))
        return harness("cannot write " + dir + "/" + kRecord);
      seal(dir);
      b.module_dir = dir;
      if (inline_builds) build_wanted_pch_variants(cuda, built.value("pch_wanted", nlohmann::json::array()));
      return b;
    }
    if (o.kind == Outcome::Kind::LoadFailed && o.message.rfind("build call failed", 0) == 0) {
      const size_t nl = o.message.find('\n');  // the module's own fault, but not cached: no compiler ran
      b.ok = false;
      b.error = o.message.substr(0, nl);
      b.log_head = nl == std::string::npos ? "" : o.message.substr(nl + 1);
      std::filesystem::remove_all(dir, ec);
      return b;
    }
    if (o.kind == Outcome::Kind::LoadFailed && o.message.rfind("build failed", 0) == 0) {
      // The compiler out of memory under gauntlet's own limit (--memory-limit bounds the build
      // child's address space) says nothing about the module: never cached, never the kernel's.
      if (compiler_ran_out_of_memory(o.message)) {
        std::filesystem::remove_all(dir, ec);
        return harness("the compiler ran out of memory under the build child's limit (raise --memory-limit): " +
                       o.message.substr(0, o.message.find('\n')));
      }
      const size_t nl = o.message.find('\n');
      b.ok = false;
      b.error = o.message.substr(0, nl);
      b.log_head = nl == std::string::npos ? "" : o.message.substr(nl + 1);
      out["error"] = b.error;
      out["log_head"] = b.log_head;
      build_internal::write_file_atomic(dir + "/" + kFailure, out.dump(1));
      seal(dir);
      return b;
    }
    if (o.kind == Outcome::Kind::TimedOut) {
      b.ok = false;
      b.timed_out = true;  // not cached: a slow machine, or a larger --build-timeout, may finish it
      b.error = "its import and build ran past --build-timeout (" +
                std::to_string(launcher.options().module_load_seconds) + " s): " + o.message;
      std::filesystem::remove_all(dir, ec);
      return b;
    }
    if (o.kind == Outcome::Kind::HarnessError) {
      std::filesystem::remove_all(dir, ec);
      return harness(o.message);
    }
    // The module raised while imported or constructed, for a reason other than a build: no record,
    // so its gate children load it without prebuilt extensions and each reports the load-error.
    std::filesystem::remove_all(dir, ec);
    b.module_dir.clear();
    return b;
  }
};

}  // namespace

void build_pch_headers_on_demand(bool on) { g_pch_on_demand = on; }

std::string module_builds_root() { return getenv_or("GAUNTLET_MODULE_BUILDS", "/var/tmp/gauntlet-module-builds"); }

std::string module_build_key(const KernelManifest& manifest, std::string* error) {
  std::string module, reference;
  if (!build_internal::read_file(manifest.source, &module, error)) return "";
  if (!manifest.reference.empty() && !build_internal::read_file(manifest.reference, &reference, error)) return "";
  return sha256_hex("gauntlet-module-build-v1\n" + toolchain_identity(manifest.device == "cuda") + "\nmodule\n" +
                    sha256_hex(module) + "\nreference\n" + sha256_hex(reference) + "\ndevice\n" + manifest.device);
}

BuildResult build_python_module(const KernelManifest& manifest, Launcher& launcher) {
  ModuleBuild m(manifest, launcher);
  if (auto done = m.choose_dir()) return *done;
  // One builder per key across threads, lanes and gauntlet processes; the others wait, then hit.
  FileLock lock(m.dir + ".lock", FileLock::Mode::Exclusive);
  if (auto done = m.cached()) return *done;
  if (auto done = m.prepare_dir()) return *done;

  // Python mode through the load too: a Python load has the builder's limit, not the gate's.
  struct PythonMode {
    Launcher& l;
    bool was;
    ~PythonMode() { l.set_python_module(was); }
  } python_mode{launcher, launcher.python_module()};
  launcher.set_python_module(true);
  if (auto done = m.load_in_build_child()) return *done;
  return m.record_outcome();
}

}  // namespace gauntlet
