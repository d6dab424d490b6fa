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
std::string fresh_builds(const std::string&) {
  char tmpl[] = "/var/tmp/gauntlet-e2e-builds-XXXXXX";
  const std::string builds = mkdtemp(tmpl);
  setenv("GAUNTLET_MODULE_BUILDS", builds.c_str(), 1);
  return builds;
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
