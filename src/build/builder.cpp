// Builds native kernel sources (.cpp with g++, .cu with nvcc) into shared objects, cached by content.
//
// The kernel source is never edited: a generated wrapper unit #includes it (by absolute path, so its
// own relative includes still resolve), then gauntlet/kernel_adapter.h, and exports
// gauntlet_entries_v1(). Two preludes shadow <torch/torch.h> and <torch/extension.h>:
//   light (src/prelude)       ATen + torch/types.h, precompiled: ~2 s a kernel;
//   full  (src/prelude_full)  the real torch/torch.h, precompiled: ~8 s a kernel;
// light is tried first, full when light fails on a missing declaration. Neither needs Python.
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <dirent.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <regex>
#include <sstream>
#include <thread>

#include "build_util.h"
#include "compiler_process.h"
#include "gauntlet/build/build_cache.h"
#include "gauntlet/build/builder.h"
#include "gauntlet/common/interrupt.h"

extern char** environ;

#ifndef GAUNTLET_SOURCE_DIR
#define GAUNTLET_SOURCE_DIR "."
#endif

namespace gauntlet {
using namespace build_internal;

namespace {

// Bump when the wrapper, the flags' meaning or the cache layout changes.
constexpr const char* kBuilderFormat = "gauntlet-builder-3";

#define GAUNTLET_STR2(x) #x
#define GAUNTLET_STR(x) GAUNTLET_STR2(x)
#ifdef _GLIBCXX_USE_CXX11_ABI
constexpr const char* kCxx11Abi = GAUNTLET_STR(_GLIBCXX_USE_CXX11_ABI);
#else
constexpr const char* kCxx11Abi = "1";
#endif

// ---- where things are -------------------------------------------------------------------------

struct Layout {
  std::string prelude;       // light prelude directory
  std::string prelude_full;  // full prelude directory
  std::string include;       // gauntlet's include directory (kernel_adapter.h, kernel_abi.h)
};

Layout layout() {
  Layout l;
  std::string env = getenv_str("GAUNTLET_PRELUDE_DIR");
  l.prelude = strip_slashes(env.empty() ? std::string(GAUNTLET_SOURCE_DIR) + "/src/prelude" : env);
  l.prelude_full = dirname_of(l.prelude) + "/prelude_full";
  std::string inc = getenv_str("GAUNTLET_INCLUDE_DIR");
  l.include = strip_slashes(inc.empty() ? std::string(GAUNTLET_SOURCE_DIR) + "/include" : inc);
  return l;
}

std::vector<std::string> torch_include_dirs() {
  static const std::vector<std::string> dirs = [] {
#ifdef GAUNTLET_TORCH_INCLUDES
    // A CMake list joined with ':' (or ';' when the definition survives CMake's list splitting).
    std::string defined = GAUNTLET_TORCH_INCLUDES;
    std::replace(defined.begin(), defined.end(), ';', ':');
    std::vector<std::string> d = split(defined, ':');
#else
    std::vector<std::string> d;
#endif
    std::string env = getenv_str("GAUNTLET_TORCH_INCLUDES");
    if (!env.empty()) {
      std::replace(env.begin(), env.end(), ';', ':');
      d = split(env, ':');
    }
    if (d.empty()) d = {"/usr/include", "/usr/include/torch/csrc/api/include"};
    // The C++ frontend's include directory must be there for torch/types.h and torch/torch.h.
    std::vector<std::string> extra;
    for (const auto& dir : d) {
      std::string api = dir + "/torch/csrc/api/include";
      if (is_dir(api) && std::find(d.begin(), d.end(), api) == d.end()) extra.push_back(api);
    }
    d.insert(d.end(), extra.begin(), extra.end());
    return d;
  }();
  return dirs;
}

int find_loaded_torch(struct dl_phdr_info* info, size_t, void* data) {
  auto* out = static_cast<std::string*>(data);
  if (info->dlpi_name && std::strstr(info->dlpi_name, "/libtorch_cpu.so")) {
    *out = info->dlpi_name;
    return 1;
  }
  return 0;
}

// The libtorch_cpu.so kernels link against: the one this process runs on, else one beside the
// include directories (pip layout torch/include -> torch/lib), else the linker's default path.
std::string torch_library() {
  static const std::string lib = [] {
    std::string env = getenv_str("GAUNTLET_TORCH_LIBDIR");
    if (!env.empty() && is_file(env + "/libtorch_cpu.so")) return absolute_path(env + "/libtorch_cpu.so");
    std::string loaded;
    dl_iterate_phdr(find_loaded_torch, &loaded);
    if (!loaded.empty()) return absolute_path(loaded);
    for (const auto& dir : torch_include_dirs()) {
      std::string cand = dir + "/../lib/libtorch_cpu.so";
      if (is_file(cand)) return absolute_path(cand);
    }
    for (const char* dir : {"/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib"}) {
      std::string cand = std::string(dir) + "/libtorch_cpu.so";
      if (is_file(cand)) return absolute_path(cand);
    }
    return std::string();
  }();
  return lib;
}

std::string torch_identity() {
  std::string id = "includes=" + join(torch_include_dirs(), ";") + "\nlib=" + file_identity(torch_library());
  for (const auto& dir : torch_include_dirs()) {
    std::string v, err;
    if (read_file(dir + "/torch/version.h", &v, &err)) {
      id += "\nversion.h=" + v;
      break;
    }
  }
  return id;
}

std::string cuda_home(const std::string& nvcc_path) {
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    std::string v = getenv_str(var);
    if (!v.empty() && is_dir(v)) return strip_slashes(v);
  }
  if (!nvcc_path.empty()) return dirname_of(dirname_of(nvcc_path));
  return "/usr/local/cuda";
}

std::string cuda_gencode() {
  std::string arch = getenv_str("GAUNTLET_CUDA_ARCH");
  if (arch.empty()) return "arch=compute_90,code=sm_90";
  if (arch.find('=') != std::string::npos) return arch;
  std::string digits;
  for (char c : arch) {
    if (std::isdigit(static_cast<unsigned char>(c))) digits += c;
  }
  std::string suffix = (!arch.empty() && std::isalpha(static_cast<unsigned char>(arch.back()))) ? std::string(1, arch.back()) : "";
  return "arch=compute_" + digits + suffix + ",code=sm_" + digits + suffix;
}

// ---- the toolchain ----------------------------------------------------------------------------

struct Toolchain {
  bool nvcc = false;
  std::string name;                   // the compiler as configured ("g++")
  std::vector<std::string> launcher;  // compiler command words, the first resolved to a path
  std::string identity;               // what of the compiler goes into the key
  std::vector<std::string> compile_flags;
  std::vector<std::string> link_flags;
};

bool valid_entry_name(const std::string& name) {
  static const std::regex re("[A-Za-z_][A-Za-z0-9_]*(::[A-Za-z_][A-Za-z0-9_]*)*");
  return std::regex_match(name, re);
}

std::vector<std::string> include_flags(const Layout& l, bool full) {
  std::vector<std::string> f = {"-I" + (full ? l.prelude_full : l.prelude), "-I" + l.include};
  for (const auto& d : torch_include_dirs()) f.push_back("-I" + d);
  return f;
}

std::string wrapper_source(const std::string& abs_source, const std::vector<std::string>& entries) {
  std::ostringstream w;
  w << "// Generated by gauntlet's kernel builder: the kernel source, then its entry table.\n";
  w << "#include \"" << abs_source << "\"\n";
  w << "#include \"gauntlet/kernel_adapter.h\"\n\n";
  w << "namespace {\n";
  for (std::size_t i = 0; i < entries.size(); ++i) {
    w << "int gauntlet_invoke_" << i
      << "(const std::vector<gauntlet::KernelArg>* args, std::vector<at::Tensor>* outputs, "
         "std::string* error) {\n"
      << "  return gauntlet::detail::invoke_entry(&" << entries[i] << ", args, outputs, error);\n"
      << "}\n";
  }
  w << "}  // namespace\n\n";
  w << "extern \"C\" __attribute__((visibility(\"default\"))) const gauntlet::KernelEntry* "
    << "gauntlet_entries_v1() {\n";  // GAUNTLET_ENTRIES_SYMBOL (kernel_abi.h)
  w << "  static const gauntlet::KernelEntry table[] = {\n";
  for (std::size_t i = 0; i < entries.size(); ++i) {
    w << "      {\"" << entries[i] << "\", gauntlet::detail::entry_signature(&" << entries[i]
      << "), &gauntlet_invoke_" << i << "},\n";
  }
  w << "      {nullptr, nullptr, nullptr}};\n";
  w << "  return table;\n}\n";
  return w.str();
}

// ---- the precompiled prelude -------------------------------------------------------------------

// Builds (once per compiler, flags and prelude bytes) cache/pch/<key>/gauntlet_prelude.h(.gch) and
// returns the header to pass with -include; "" when no usable PCH (the build then runs without).
std::string ensure_pch(const Toolchain& tc, const Layout& l, bool full, const std::string& cache_dir,
                       const std::string& prelude_bytes, double deadline, bool verbose) {
  if (tc.nvcc || getenv_str("GAUNTLET_NO_PCH") == "1") return "";
  std::vector<std::string> inc = include_flags(l, full);
  std::string key = sha256_hex(std::string(kBuilderFormat) + "\npch\n" + (full ? "full" : "light") + "\n" +
                               tc.identity + "\n" + join(tc.compile_flags, " ") + "\n" + join(inc, " ") +
                               "\n" + torch_identity() + "\n" + prelude_bytes);
  std::string dir = cache_dir + "/pch/" + key.substr(0, 32);
  std::string header = dir + "/gauntlet_prelude.h";
  std::string gch = header + ".gch";
  if (is_file(gch) && is_file(header)) return header;
  if (is_file(dir + "/FAILED")) return "";
  std::string err;
  if (!make_dirs(dir, &err)) return "";
  FileLock lock(dir + ".lock");
  if (is_file(gch) && is_file(header)) return header;  // another builder made it meanwhile
  std::string text = std::string("// gauntlet ") + (full ? "full" : "light") +
                     " prelude, precompiled for kernel builds\n"
                     "#include <torch/extension.h>\n"
                     "#include \"gauntlet/kernel_adapter.h\"\n";
  if (!write_file_atomic(header, text)) return "";
  std::string tmp_gch = gch + ".tmp." + std::to_string(getpid());
  std::vector<std::string> argv = tc.launcher;
  argv.insert(argv.end(), tc.compile_flags.begin(), tc.compile_flags.end());
  argv.insert(argv.end(), inc.begin(), inc.end());
  argv.insert(argv.end(), {"-x", "c++-header", header, "-o", tmp_gch});
  if (verbose) std::cerr << "[gauntlet build] pch: " << join(argv, " ") << "\n";
  ProcResult r = run_process(argv, dir + "/build.log", std::max(1.0, deadline - now_s()));
  if (!proc_ok(r)) {
    unlink(tmp_gch.c_str());
    if (verbose) std::cerr << "[gauntlet build] pch failed: " << first_error_line(r.output) << "\n";
    if (failure_is_deterministic(r)) write_file_atomic(dir + "/FAILED", r.output);
    return "";
  }
  if (rename(tmp_gch.c_str(), gch.c_str()) != 0) {
    unlink(tmp_gch.c_str());
    return "";
  }
  if (verbose) std::cerr << "[gauntlet build] pch built in " << r.seconds << " s\n";
  return header;
}

Toolchain make_toolchain(const BuildRequest& req, const BuildConfig& cfg, bool nvcc, std::string* error) {
  Toolchain tc;
  tc.nvcc = nvcc;
  std::string configured = nvcc ? cfg.nvcc : cfg.cxx;
  std::vector<std::string> words = split_words(configured);
  if (words.empty()) words = {nvcc ? "nvcc" : "g++"};
  std::string path = resolve_executable(words[0]);
  if (path.empty()) {
    *error = "compiler not found: " + words[0] + (words[0].find('/') == std::string::npos ? " (not on PATH)" : "");
    return tc;
  }
  tc.name = words[0];
  tc.launcher = words;
  tc.launcher[0] = path;
  tc.identity = "compiler=" + join(words, " ") + "@" + file_identity(path);
  std::string abi = std::string("-D_GLIBCXX_USE_CXX11_ABI=") + kCxx11Abi;
  std::string torch_lib = torch_library();
  std::string torch_libdir = torch_lib.empty() ? "" : dirname_of(torch_lib);
  bool cuda = req.device == "cuda";
  if (!nvcc) {
    if (req.address_sanitizer) {
      tc.compile_flags = {"-std=c++17", "-O1", "-g", "-fsanitize=address", "-fno-omit-frame-pointer"};
    } else {
      tc.compile_flags = {"-std=c++17", "-O2"};
    }
    tc.compile_flags.insert(tc.compile_flags.end(), {"-fPIC", "-fvisibility=hidden", abi});
    if (cuda) tc.compile_flags.push_back("-I" + cuda_home(resolve_executable(cfg.nvcc)) + "/include");
    tc.link_flags = {"-shared"};
    if (req.address_sanitizer) tc.link_flags.push_back("-fsanitize=address");
    if (!torch_libdir.empty()) {
      tc.link_flags.push_back("-L" + torch_libdir);
      tc.link_flags.push_back("-Wl,-rpath," + torch_libdir);
    }
    if (cuda) {
      std::string home = cuda_home(resolve_executable(cfg.nvcc));
      tc.link_flags.insert(tc.link_flags.end(), {"-L" + home + "/lib64", "-ltorch_cuda", "-lc10_cuda", "-lcudart"});
    }
    tc.link_flags.insert(tc.link_flags.end(), {"-ltorch_cpu", "-lc10"});
  } else {
    std::string host = resolve_executable(split_words(cfg.cxx).empty() ? "g++" : split_words(cfg.cxx)[0]);
    if (!host.empty()) tc.identity += "\nhost=" + file_identity(host);
    tc.compile_flags = {"-std=c++17"};
    if (req.address_sanitizer) {
      tc.compile_flags.insert(tc.compile_flags.end(),
                              {"-O1", "-g", "-Xcompiler", "-fsanitize=address,-fno-omit-frame-pointer"});
    } else {
      tc.compile_flags.push_back("-O2");
    }
    if (!host.empty()) tc.compile_flags.insert(tc.compile_flags.end(), {"-ccbin", host});
    tc.compile_flags.insert(tc.compile_flags.end(),
                            {"-Xcompiler", "-fPIC", "-Xcompiler", "-fvisibility=hidden", "-gencode",
                             cuda_gencode(), abi, "--expt-relaxed-constexpr",
                             // the flags torch.utils.cpp_extension compiles CUDA sources with
                             "-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
                             "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__"});
    tc.link_flags = {"-shared", "--cudart", "shared"};
    if (req.address_sanitizer) tc.link_flags.insert(tc.link_flags.end(), {"-Xcompiler", "-fsanitize=address"});
    if (!torch_libdir.empty()) {
      tc.link_flags.insert(tc.link_flags.end(), {"-L" + torch_libdir, "-Xlinker", "-rpath", "-Xlinker", torch_libdir});
    }
    tc.link_flags.insert(tc.link_flags.end(), {"-ltorch_cpu", "-lc10", "-lcudart"});
    if (cuda) tc.link_flags.insert(tc.link_flags.end(), {"-ltorch_cuda", "-lc10_cuda"});
  }
  return tc;
}

void error_result(BuildResult& res, double t0, const std::string& error) {
  res.ok = false;
  res.error = error;
  res.seconds = now_s() - t0;
}

}  // namespace

BuildConfig default_build_config() {
  BuildConfig c;
  c.cache_dir = default_cache_dir();
  std::string cxx = getenv_str("CXX");
  if (!cxx.empty()) c.cxx = cxx;
  std::string nvcc = getenv_str("NVCC");
  if (!nvcc.empty()) c.nvcc = nvcc;
  c.verbose = getenv_str("GAUNTLET_BUILD_VERBOSE") == "1";
  return c;
}

BuildResult build_kernel(const BuildRequest& req, const BuildConfig& cfg) {
  BuildResult res;
  double t0 = now_s();
  try {
    // ---- the request ----
    if (req.device != "cpu" && req.device != "cuda") {
      error_result(res, t0, "unknown device '" + req.device + "' (expected cpu or cuda)");
      return res;
    }
    if (req.entries.empty()) {
      error_result(res, t0, "no entry function named");
      return res;
    }
    for (const auto& e : req.entries) {
      if (!valid_entry_name(e)) {
        error_result(res, t0, "invalid entry name '" + e + "' (expected a C++ identifier)");
        return res;
      }
    }
    std::string source, read_error;
    if (!read_file(req.source_path, &source, &read_error)) {
      error_result(res, t0, "cannot read kernel source " + req.source_path + ": " + read_error);
      return res;
    }
    std::string abs_source = absolute_path(req.source_path);
    if (abs_source.find_first_of("\"\n\\") != std::string::npos) {
      error_result(res, t0, "kernel source path has characters a #include cannot carry: " + abs_source);
      return res;
    }
    res.source_hash = sha256_hex(source);
    bool nvcc = ends_with(abs_source, ".cu") || ends_with(abs_source, ".cuh");

    std::string cache_dir = strip_slashes(cfg.cache_dir.empty() ? default_cache_dir() : cfg.cache_dir);
    std::string dir_error;
    if (!make_dirs(cache_dir, &dir_error)) {
      error_result(res, t0, "cannot create the build cache: " + dir_error);
      return res;
    }

    std::string tc_error;
    Toolchain tc = make_toolchain(req, cfg, nvcc, &tc_error);
    if (!tc_error.empty()) {
      error_result(res, t0, tc_error);
      return res;
    }
    Layout lay = layout();
    std::string prelude_bytes = "light:\n" + directory_bytes(lay.prelude) + "\nfull:\n" +
                                directory_bytes(lay.prelude_full);
    for (const char* h : {"/gauntlet/kernel_adapter.h", "/gauntlet/kernel_abi.h"}) {
      std::string b, e;
      read_file(lay.include + h, &b, &e);
      prelude_bytes += std::string("\n") + h + ":\n" + b;
    }

    // ---- the key ----
    std::ostringstream k;
    k << kBuilderFormat << "\nsource:" << source.size() << "\n" << source << "\nlocal includes:\n"
      << local_include_bytes(abs_source, source) << "\nentries:" << join(req.entries, ",")
      << "\ndevice:" << req.device << "\nasan:" << req.address_sanitizer << "\n"
      << tc.identity << "\ncompile:" << join(tc.compile_flags, " ") << "\nlink:" << join(tc.link_flags, " ")
      << "\n" << torch_identity() << "\nprelude:\n" << prelude_bytes;
    res.cache_key = sha256_hex(k.str());
    std::string so_path = cache_dir + "/" + res.cache_key + ".so";
    std::string json_path = cache_dir + "/" + res.cache_key + ".json";

    auto from_cache = [&]() {
      CacheRecord rec;
      if (!read_cache_record(json_path, &rec)) return false;
      if (rec.ok && !is_file(so_path)) return false;
      res.cache_hit = true;
      res.ok = rec.ok;
      res.prelude = rec.prelude;
      if (rec.ok) {
        res.so_path = so_path;
      } else {
        res.error = rec.error;
        res.log_head = rec.log_head;
      }
      res.seconds = now_s() - t0;
      return true;
    };
    if (from_cache()) return res;

    // ---- build (one builder per key at a time; others wait, then hit) ----
    std::string locks = cache_dir + "/locks", tmp_root = cache_dir + "/tmp";
    if (!make_dirs(locks, &dir_error) || !make_dirs(tmp_root, &dir_error)) {
      error_result(res, t0, "cannot create the build cache: " + dir_error);
      return res;
    }
    // Lock files are never removed (that races with flock), so they are sharded, not per key.
    FileLock lock(locks + "/" + res.cache_key.substr(0, 3) + ".lock");
    if (from_cache()) return res;

    std::string tmpl = tmp_root + "/build-XXXXXX";
    std::vector<char> tmpbuf(tmpl.begin(), tmpl.end());
    tmpbuf.push_back('\0');
    if (!mkdtemp(tmpbuf.data())) {
      error_result(res, t0, std::string("cannot create a build directory: ") + std::strerror(errno));
      return res;
    }
    std::string tmp = tmpbuf.data();
    std::string wrapper = tmp + "/" + kWrapperName + (nvcc ? ".cu" : ".cpp");
    std::string out_so = tmp + "/kernel.so";
    if (!write_file_atomic(wrapper, wrapper_source(abs_source, req.entries))) {
      remove_tree(tmp);
      error_result(res, t0, "cannot write the wrapper unit in " + tmp);
      return res;
    }

    double deadline = t0 + std::max(1, cfg.timeout_seconds);
    ProcResult last;
    std::string last_prelude;
    bool built = false;
    for (int attempt = 0; attempt < 2 && !built; ++attempt) {
      bool full = attempt == 1;
      if (full && !worth_full_retry(last.output)) break;
      std::string pch = ensure_pch(tc, lay, full, cache_dir, prelude_bytes, deadline, cfg.verbose);
      std::vector<std::string> argv = tc.launcher;
      argv.insert(argv.end(), tc.compile_flags.begin(), tc.compile_flags.end());
      if (!pch.empty()) argv.insert(argv.end(), {"-Winvalid-pch", "-include", pch});
      auto inc = include_flags(lay, full);
      argv.insert(argv.end(), inc.begin(), inc.end());
      argv.insert(argv.end(), {"-o", out_so, wrapper});
      argv.insert(argv.end(), tc.link_flags.begin(), tc.link_flags.end());
      if (cfg.verbose) std::cerr << "[gauntlet build] " << join(argv, " ") << "\n";
      double remaining = deadline - now_s();
      if (remaining <= 0) {
        last = ProcResult();
        last.spawned = true;
        last.timed_out = true;
        break;
      }
      // The temp dir is cut from messages below: "gauntlet_wrapper.cpp:7:42: error: ..."
      last = run_process(argv, tmp + "/compile-" + (full ? "full" : "light") + ".log", remaining);
      last_prelude = full ? "full" : "light";
      std::string prefix = tmp + "/";
      for (std::size_t p; (p = last.output.find(prefix)) != std::string::npos;) last.output.erase(p, prefix.size());
      if (cfg.verbose) {
        std::cerr << "[gauntlet build] " << last_prelude << " prelude: " << (proc_ok(last) ? "ok" : "failed")
                  << " in " << last.seconds << " s" << (pch.empty() ? " (no pch)" : "") << "\n";
        if (last.output.find("not used because") != std::string::npos) {
          std::cerr << "[gauntlet build] warning: precompiled prelude not used\n";
        }
      }
      if (!last.spawned || last.timed_out) break;
      built = proc_ok(last) && is_file(out_so);
    }

    CacheRecord rec;
    rec.source = abs_source;
    rec.source_hash = res.source_hash;
    rec.entries = req.entries;
    rec.device = req.device;
    rec.address_sanitizer = req.address_sanitizer;
    rec.compiler = tc.identity;
    rec.prelude = last_prelude;
    rec.seconds = now_s() - t0;
    if (built) {
      if (rename(out_so.c_str(), so_path.c_str()) != 0) {
        remove_tree(tmp);
        error_result(res, t0, "cannot store the built kernel in the cache: " + std::string(std::strerror(errno)));
        return res;
      }
      rec.ok = true;
      write_cache_record(json_path, rec);
      res.ok = true;
      res.so_path = so_path;
      res.prelude = last_prelude;
    } else {
      res.ok = false;
      res.prelude = last_prelude;
      if (!last.spawned) {
        res.error = "compiler not found: " + tc.launcher[0] + " (" + std::strerror(last.spawn_errno) + ")";
      } else if (last.timed_out) {
        res.error = "compile timeout: " + tc.name + " ran longer than " +
                    std::to_string(cfg.timeout_seconds) + " s and was killed";
      } else {
        res.error = "compile error: " + first_error_line(last.output);
        res.log_head = error_log_head(last.output);
        if (failure_is_deterministic(last)) {
          rec.ok = false;
          rec.error = res.error;
          rec.log_head = res.log_head;
          write_cache_record(json_path, rec);
        }
      }
    }
    remove_tree(tmp);
  } catch (const std::exception& e) {
    res.ok = false;
    res.error = std::string("internal builder error: ") + e.what();
  }
  res.seconds = now_s() - t0;
  return res;
}

}  // namespace gauntlet
