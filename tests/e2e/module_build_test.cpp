// End to end: Python modules' extensions built once each, in directories of their own, whatever the extensions are called.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <map>

#include "e2e_util.h"

using namespace gauntlet::e2e;

namespace {

// corpus/modules_ext: four CPU load_inline modules whose extensions are all named "matmul_cuda"
// (two correct, a NaN-dropping ReLU, a compile error), as dozens of KernelBench solutions name theirs.
const char* kModules[] = {"relu_ext", "relu_ext_nan", "matmul_ext", "matmul_ext_compile_error"};
const std::string kGates = "contract,accuracy,special-values";

// The builds of one test live in a directory of its own (GAUNTLET_MODULE_BUILDS), so no earlier
// run's build can stand in for this one's; not under /tmp, which each child sees as its own.
// The precompiled torch/extension.h (half a minute to build) is shared by the tests: its own root.
const char* kSharedPchRoot = "/var/tmp/gauntlet-e2e-pch";

std::string fresh_builds(const std::string&) {
  char tmpl[] = "/var/tmp/gauntlet-e2e-builds-XXXXXX";
  const std::string builds = mkdtemp(tmpl);
  setenv("GAUNTLET_MODULE_BUILDS", builds.c_str(), 1);
  setenv("GAUNTLET_PCH_ROOT", kSharedPchRoot, 1);
  return builds;
}

// {variant flags: header directory} of the headers under `root` (flags.json of each).
std::map<std::string, std::string> pch_variants(const std::string& root) {
  std::map<std::string, std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(root, ec)) {
    const nlohmann::json flags = nlohmann::json::parse(read_file((e.path() / "flags.json").string()), nullptr, false);
    if (e.is_directory() && flags.is_object()) out[flags.value("variant", "?")] = e.path().string();
  }
  return out;
}

// What the build step says of its first extension's C++ unit and the header ("used", ...).
std::string first_extension_pch(const nlohmann::json& record) {
  const std::string dir = record["build"].value("module_dir", "");
  const nlohmann::json built = nlohmann::json::parse(read_file(dir + "/gauntlet-build.json"), nullptr, false);
  if (!built.is_object() || !built.contains("extensions") || built["extensions"].empty()) return "no record in " + dir;
  return built["extensions"][0].value("pch", "");
}

std::string copy_corpus(const std::string& dir) {
  const std::string corpus = dir + "/corpus";
  std::filesystem::create_directories(corpus);
  for (const char* m : kModules)
    for (const char* ext : {".py", ".json"})
      std::filesystem::copy_file(source_dir() + "/corpus/modules_ext/" + m + ext, corpus + "/" + m + ext);
  return corpus;
}

std::map<std::string, std::string> gate_outcomes(const nlohmann::json& record) {
  std::map<std::string, std::string> out;
  for (const auto& g : record["gates"])
    out[g["name"].get<std::string>()] = g["status"].get<std::string>() + "/" + g.value("category", "");
  return out;
}

std::string module_of(const nlohmann::json& record) {
  const std::string source = record.value("source", "");
  const std::string file = source.substr(source.rfind('/') + 1);
  return file.substr(0, file.rfind('.'));
}

}  // namespace

// Audited together, two at a time, each module gets its own build and exactly the verdicts it gets
// alone; the compile error is one build-error with the compiler's line; each build directory is
// distinct and the gate children load prebuilt extensions instead of compiling.
TEST(ModuleBuilds, CollidingExtensionNamesGetTheirOwnBuildsAndTheVerdictsOfARunAlone) {
  REQUIRE_PYTHON_TORCH();
  const std::string dir = temp_dir();
  const std::string builds = fresh_builds(dir);
  const std::string corpus = copy_corpus(dir);
  auto audit = run_gauntlet({"audit", corpus, "--jobs", "2", "--gates", kGates, "--seed", "1", "--db", dir + "/a.db",
                             "--json", dir + "/a.json", "--replay-dir", dir + "/replays"},
                            1200);
  ASSERT_EQ(audit.exit_code, 1) << audit.out << audit.err;  // two modules fail
  const nlohmann::json records = nlohmann::json::parse(read_file(dir + "/a.json"), nullptr, false);
  ASSERT_TRUE(records.is_array()) << audit.out << audit.err;
  ASSERT_EQ(records.size(), 4u) << records.dump(1);
  std::map<std::string, std::map<std::string, std::string>> together;
  for (const auto& r : records) together[module_of(r)] = gate_outcomes(r);

  EXPECT_EQ(together["relu_ext"]["special-values"], "pass/") << records.dump(1);
  EXPECT_EQ(together["matmul_ext"]["accuracy"], "pass/") << records.dump(1);
  EXPECT_EQ(together["relu_ext_nan"]["special-values"], "fail/wrong-result") << records.dump(1);
  EXPECT_EQ(together["relu_ext_nan"]["accuracy"], "pass/") << records.dump(1);
  for (const std::string& g : {"contract", "accuracy", "special-values"})
    EXPECT_EQ(together["matmul_ext_compile_error"][g], "error/build-error") << records.dump(1);
  for (const auto& r : records)
    if (module_of(r) == "matmul_ext_compile_error")
      EXPECT_NE(r["build"]["log_head"].get<std::string>().find("gauntlet_no_such_function"), std::string::npos)
          << r["build"].dump(1);

  // One directory per module, each with its record (three built, one failed to compile).
  int built = 0, failed = 0;
  for (const auto& e : std::filesystem::directory_iterator(builds)) {
    if (!e.is_directory()) continue;
    built += std::filesystem::exists(e.path() / "gauntlet-build.json");
    failed += std::filesystem::exists(e.path() / "gauntlet-build-failed.json");
  }
  EXPECT_EQ(built, 3);
  EXPECT_EQ(failed, 1);
  std::filesystem::remove_all(builds);

  // Each alone, in a fresh build directory of its own: the same verdicts.
  for (const char* m : kModules) {
    const std::string alone_dir = temp_dir();
    fresh_builds(alone_dir);
    Verified v = verify_report({corpus + "/" + m + ".json", "--gates", kGates});
    ASSERT_TRUE(v.report.is_object()) << v.log;
    EXPECT_EQ(gate_outcomes(v.report), together[m]) << m << "\n" << v.log;
  }
  unsetenv("GAUNTLET_MODULE_BUILDS");
}

// A module built once is not built again: the second verify finds the first's build (a cache hit)
// and its gate children say they loaded the prebuilt extension.
TEST(ModuleBuilds, AnUnchangedModuleIsBuiltOnceAndItsChildrenNeverCompile) {
  REQUIRE_PYTHON_TORCH();
  const std::string dir = temp_dir();
  fresh_builds(dir);
  const std::string corpus = copy_corpus(dir);
  Verified first = verify_report({corpus + "/relu_ext.json", "--gates", "contract"});
  ASSERT_EQ(first.exit_code, 0) << first.log;
  EXPECT_FALSE(first.report["build"].value("cache_hit", true)) << first.report["build"].dump(1);
  Verified second = verify_report({corpus + "/relu_ext.json", "--gates", "contract"});
  ASSERT_EQ(second.exit_code, 0) << second.log;
  EXPECT_TRUE(second.report["build"].value("cache_hit", false)) << second.report["build"].dump(1);
  EXPECT_NE(second.report.dump().find("prebuilt-extensions(1)"), std::string::npos) << second.report.dump(1);
  // A byte changed is another module: built anew.
  write_file(corpus + "/relu_ext.py", read_file(corpus + "/relu_ext.py") + "\n# changed\n");
  Verified third = verify_report({corpus + "/relu_ext.json", "--gates", "contract"});
  ASSERT_EQ(third.exit_code, 0) << third.log;
  EXPECT_FALSE(third.report["build"].value("cache_hit", true)) << third.report["build"].dump(1);
  unsetenv("GAUNTLET_MODULE_BUILDS");
}

// The shared plain header, made by an audit (which builds headers it lacks; a lone verify does not).
void audit_plain_header(const std::string& dir, const std::string& corpus) {
  auto audit = run_gauntlet({"audit", corpus + "/relu_ext.json", "--gates", "contract", "--db", dir + "/h.db",
                             "--replay-dir", dir + "/replays"}, 1200);
  ASSERT_EQ(audit.exit_code, 0) << audit.out << audit.err;
}

// A load_inline module's C++ unit reads the precompiled torch/extension.h (about half the build:
// 22.4 s -> 10.5 s for matmul_ext on a 2-core machine), and its verdicts are those of any build.
// The audit made the header; a later verify takes it.
TEST(ModuleBuilds, ALoadInlineBuildReadsThePrecompiledTorchHeader) {
  REQUIRE_PYTHON_TORCH();
  const std::string dir = temp_dir();
  fresh_builds(dir);
  const std::string corpus = copy_corpus(dir);
  audit_plain_header(dir, corpus);
  Verified v = verify_report({corpus + "/matmul_ext.json", "--gates", "contract,accuracy"});
  ASSERT_EQ(v.exit_code, 0) << v.log;
  EXPECT_EQ(first_extension_pch(v.report), "used") << v.report["build"].dump(1);
  // GAUNTLET_PCH=0: none offered, same verdict.
  setenv("GAUNTLET_PCH", "0", 1);
  fresh_builds(dir);
  Verified off = verify_report({corpus + "/matmul_ext.json", "--gates", "contract,accuracy"});
  unsetenv("GAUNTLET_PCH");
  ASSERT_EQ(off.exit_code, 0) << off.log;
  EXPECT_EQ(first_extension_pch(off.report), "not offered") << off.report["build"].dump(1);
  const auto variants = pch_variants(kSharedPchRoot);
  ASSERT_EQ(variants.count(""), 1u) << kSharedPchRoot;
  EXPECT_TRUE(std::filesystem::exists(variants.at("") + "/gauntlet_torch_extension.h.gch"));
  unsetenv("GAUNTLET_MODULE_BUILDS");
  unsetenv("GAUNTLET_PCH_ROOT");
}

// A module passing its own C++ flags (-O3, as many KernelBench solutions do) cannot use the plain
// header; in an audit its build step makes a header with its flags, and the next module with the
// same flags reads it. Flags that could run or read something outside the sandbox (-fplugin) never
// reach the header's compiler: that module just builds (here: fails to) without one.
TEST(ModuleBuilds, ModulesOwnFlagsGetAHeaderOfTheirOwnForTheModulesAfterThem) {
  REQUIRE_PYTHON_TORCH();
  const std::string dir = temp_dir();
  fresh_builds(dir);
  const std::string corpus = copy_corpus(dir);
  audit_plain_header(dir, corpus);
  // A header root of this test's own, holding only the plain header (hard links: no copy, no rebuild).
  char tmpl[] = "/var/tmp/gauntlet-e2e-pch-own-XXXXXX";  // not under /tmp, which no child sees
  const std::string root = mkdtemp(tmpl);
  for (const auto& [variant, header_dir] : pch_variants(kSharedPchRoot)) {
    if (!variant.empty()) continue;
    const std::string to = root + "/" + std::filesystem::path(header_dir).filename().string();
    std::filesystem::create_directories(to);
    for (const auto& f : std::filesystem::directory_iterator(header_dir))
      std::filesystem::create_hard_link(f.path(), to + "/" + f.path().filename().string());
  }
  ASSERT_EQ(pch_variants(root).size(), 1u);
  setenv("GAUNTLET_PCH_ROOT", root.c_str(), 1);
  const std::string own = dir + "/own";
  std::filesystem::create_directories(own);
  const std::string matmul = read_file(corpus + "/matmul_ext.py");
  const std::string manifest = read_file(corpus + "/matmul_ext.json");
  auto with_flags = [&](const std::string& name, const std::string& flags, const std::string& salt) {
    std::string py = matmul;
    const size_t at = py.find("load_inline(");
    ASSERT_NE(at, std::string::npos);
    py.insert(at + 12, "extra_cflags=" + flags + ", ");
    write_file(own + "/" + name + ".py", py + "\n# " + salt + "\n");
    std::string m = manifest;
    m.replace(m.find("matmul_ext.py"), 13, name + ".py");
    write_file(own + "/" + name + ".json", m);
  };
  with_flags("a_o3", "[\"-O3\"]", "first");
  with_flags("b_o3", "[\"-O3\"]", "second");
  with_flags("c_plugin", "[\"-fplugin=/nonexistent/gauntlet-plugin.so\"]", "third");
  auto audit = run_gauntlet({"audit", own, "--jobs", "1", "--build-jobs", "1", "--gates", "contract", "--seed", "1",
                             "--db", dir + "/a.db", "--json", dir + "/a.json", "--replay-dir", dir + "/replays"},
                            1200);
  const nlohmann::json records = nlohmann::json::parse(read_file(dir + "/a.json"), nullptr, false);
  ASSERT_TRUE(records.is_array() && records.size() == 3) << audit.out << audit.err;
  std::map<std::string, nlohmann::json> by;
  for (const auto& r : records) by[module_of(r)] = r;
  EXPECT_EQ(by["a_o3"]["verdict"], "pass") << by["a_o3"].dump(1);
  EXPECT_EQ(by["b_o3"]["verdict"], "pass") << by["b_o3"].dump(1);
  EXPECT_EQ(first_extension_pch(by["a_o3"]).rfind("no header for its flags", 0), 0u) << first_extension_pch(by["a_o3"]);
  EXPECT_EQ(first_extension_pch(by["b_o3"]), "used");
  EXPECT_EQ(gate_outcomes(by["c_plugin"])["contract"], "error/build-error") << by["c_plugin"].dump(1);
  const auto variants = pch_variants(root);
  EXPECT_EQ(variants.size(), 2u);
  EXPECT_EQ(variants.count("-O3"), 1u);
  std::filesystem::remove_all(root);
  unsetenv("GAUNTLET_MODULE_BUILDS");
  unsetenv("GAUNTLET_PCH_ROOT");
}

// The build child's light torch headers for nvcc (building.py): a plain CUDA unit gets them, a unit
// that binds itself does not, one they do not compile is built again with torch's own, and (where
// nvcc and torch's headers are here) they compile a real load_inline-style CUDA unit. The check
// script fails with the reason; it cannot pass without those four outcomes.
TEST(ModuleBuilds, CudaUnitsGetTheLightTorchHeadersAndFallBackToTorchsOwn) {
  REQUIRE_PYTHON_TORCH();
  const std::string python = getenv("GAUNTLET_PYTHON") ? getenv("GAUNTLET_PYTHON") : "/usr/bin/python3";
  const std::string cmd = "PYTHONPATH='" + source_dir() + "/python' '" + python + "' '" + source_dir() +
                          "/tests/data/python/light_cuda_headers_check.py' 2>&1";
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = pclose(p);
  EXPECT_EQ(status, 0) << out;
  EXPECT_NE(out.find("\nok\n"), std::string::npos) << out;
}

// A compiler that runs out of memory under gauntlet's own limit (--memory-limit bounds the build
// child's address space; 1G is too little for gcc on torch/extension.h here) is gauntlet's
// harness-error, never the module's build-error, and is not cached: the same module under a larger
// limit builds and passes.
TEST(ModuleBuilds, ACompilerOutOfMemoryIsAHarnessErrorAndIsNotCached) {
  REQUIRE_PYTHON_TORCH();
  const std::string dir = temp_dir();
  const std::string builds = fresh_builds(dir);
  setenv("GAUNTLET_PCH_ROOT", (dir + "/no-pch").c_str(), 1);  // no shared header: the compiler's full size
  const std::string corpus = copy_corpus(dir);
  Verified tight = verify_report({corpus + "/relu_ext.json", "--gates", "contract", "--memory-limit", "1G"});
  const std::string text = tight.report.dump();
  if (text.find("ran out of memory") == std::string::npos && text.find("virtual memory exhausted") == std::string::npos) {
    unsetenv("GAUNTLET_MODULE_BUILDS");
    GTEST_SKIP() << "the compiler fit in 1G on this machine, so no out-of-memory build to judge: " << text.substr(0, 400);
  }
  const std::map<std::string, std::string> outcomes = gate_outcomes(tight.report);
  ASSERT_EQ(outcomes.count("contract"), 1u) << text;
  EXPECT_EQ(outcomes.at("contract"), "harness-error/harness-error") << text;
  int failed_records = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(builds))
    failed_records += e.path().filename() == "gauntlet-build-failed.json";
  EXPECT_EQ(failed_records, 0) << "an out-of-memory build was cached as the module's failure";
  Verified roomy = verify_report({corpus + "/relu_ext.json", "--gates", "contract", "--memory-limit", "4G"});
  ASSERT_EQ(roomy.exit_code, 0) << roomy.log;
  EXPECT_EQ(gate_outcomes(roomy.report).at("contract").substr(0, 4), "pass") << roomy.report.dump(1);
  setenv("GAUNTLET_PCH_ROOT", kSharedPchRoot, 1);
  unsetenv("GAUNTLET_MODULE_BUILDS");
}
