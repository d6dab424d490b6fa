// Finding the kernel builder's inputs (the preludes, gauntlet's headers, torch's headers and library,
// CUDA) and making the compiler command a kernel is built with, for g++ or nvcc.
#include "toolchain.h"

#include <link.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "build_util.h"
#include "gauntlet/build/build_cache.h"

#ifndef GAUNTLET_SOURCE_DIR
#define GAUNTLET_SOURCE_DIR "."
#endif

namespace gauntlet::build_internal {

#define GAUNTLET_STR2(x) #x
#define GAUNTLET_STR(x) GAUNTLET_STR2(x)
#ifdef _GLIBCXX_USE_CXX11_ABI
constexpr const char* kCxx11Abi = GAUNTLET_STR(_GLIBCXX_USE_CXX11_ABI);
#else
constexpr const char* kCxx11Abi = "1";
#endif

// ---- where things are -------------------------------------------------------------------------

Layout layout() {
  Layout l;
  std::string env = getenv_str("GAUNTLET_PRELUDE_DIR");
  l.prelude = strip_slashes(env.empty() ? std::string(GAUNTLET_SOURCE_DIR) + "/src/prelude" : env);
  l.prelude_full = dirname_of(l.prelude) + "/prelude_full";
  std::string inc = getenv_str("GAUNTLET_INCLUDE_DIR");
  l.include = strip_slashes(inc.empty() ? std::string(GAUNTLET_SOURCE_DIR) + "/include" : inc);
  return l;
}

static std::vector<std::string> torch_include_dirs() {
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

static int find_loaded_torch(struct dl_phdr_info* info, size_t, void* data) {
  auto* out = static_cast<std::string*>(data);
  if (info->dlpi_name && std::strstr(info->dlpi_name, "/libtorch_cpu.so")) {
    *out = info->dlpi_name;
    return 1;
  }
  return 0;
}

// The libtorch_cpu.so kernels link against: the one this process runs on, else one beside the
// include directories (pip layout torch/include -> torch/lib), else the linker's default path.
static std::string torch_library() {
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

static std::string cuda_home(const std::string& nvcc_path) {
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    std::string v = getenv_str(var);
    if (!v.empty() && is_dir(v)) return strip_slashes(v);
  }
  if (!nvcc_path.empty()) return dirname_of(dirname_of(nvcc_path));
  return "/usr/local/cuda";
}

static std::string cuda_gencode() {
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

std::vector<std::string> include_flags(const Layout& l, bool full) {
  std::vector<std::string> f = {"-I" + (full ? l.prelude_full : l.prelude), "-I" + l.include};
  for (const auto& d : torch_include_dirs()) f.push_back("-I" + d);
  return f;
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

}  // namespace gauntlet::build_internal
