// End to end: every corpus kernel through the real binary matches its declared verdicts, and every
// planted bug is accepted by the KernelBench-style check but rejected by its gate.
#include <gtest/gtest.h>

#include "e2e_util.h"
#include "gauntlet/oracle/oracle.h"
#include "gauntlet/run/selftest.h"

#include <map>
#include <set>

using namespace gauntlet;

namespace {

std::vector<std::string> corpus_manifests() {
  std::vector<std::string> rel;
  const std::string dir = e2e::source_dir() + "/corpus";
  for (const std::string& m : find_manifests(dir)) rel.push_back(m.substr(dir.size() + 1));
  return rel;
}

class CorpusKernel : public ::testing::TestWithParam<std::string> {};

TEST_P(CorpusKernel, VerdictsAsDeclared) {
  // Hostile kernels run with a short wall clock and a small memory cap so hung and greedy ones
  // end quickly; CUDA ones (hostile_cuda/, run where a GPU exists) get 15 s, room for the CUDA
  // driver's start in each child.
  const bool hostile = GetParam().rfind("hostile/", 0) == 0;
  const bool hostile_cuda = GetParam().rfind("hostile_cuda/", 0) == 0;
  std::string no_python;
  if ((GetParam().rfind("modules/", 0) == 0 || GetParam().rfind("modules_ext/", 0) == 0) && !e2e::python_with_torch(&no_python))
    GTEST_SKIP() << "Python module and " << no_python;
  auto r = e2e::run_gauntlet({"selftest", "--filter", GetParam(), "--timeout", hostile ? "4" : hostile_cuda ? "15" : "60",
                              "--memory-limit", hostile || hostile_cuda ? "512M" : "4G"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  // A "device": "cuda" kernel (corpus/controls_cuda) where no CUDA device exists, or a kernel
  // whose op needs a dtype this LibTorch lacks (fp8_matmul's float8_e4m3fn on torch 1.13): the
  // selftest reports it skipped, with the reason (docs/gpu.md).
  if (r.out.find(", 1 skipped (this machine cannot run them") != std::string::npos)
    GTEST_SKIP() << "this machine cannot run the kernel: " << r.out;
  EXPECT_NE(r.out.find("1 kernels, 1 as declared"), std::string::npos) << r.out << r.err;
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = info.param.substr(0, info.param.size() - 5);
  for (char& c : n)
    if (!isalnum((unsigned char)c)) c = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(Corpus, CorpusKernel, ::testing::ValuesIn(corpus_manifests()), test_name);

TEST(Corpus, EveryImplementedGateHasTwoPlantedBugsTheKernelBenchCheckAccepts) {
  std::map<std::string, int> per_gate;
  for (const std::string& m : find_manifests(e2e::source_dir() + "/corpus/bugs")) {
    std::string error;
    auto manifest = load_manifest(m, &error);
    ASSERT_TRUE(manifest) << error;
    EXPECT_EQ(manifest->expect.value("kbcheck", ""), "accept") << m;
    const nlohmann::json gates = manifest->expect.value("gates", nlohmann::json::object());
    // A gate whose outcome the bug leaves to the cases drawn lists ["fail", "pass"]: not counted.
    for (auto& [gate, rule] : gates.items())
      if (rule.contains("status") && rule["status"].is_string() && rule["status"] == "fail") ++per_gate[gate];
  }
  for (const char* gate :
       {"contract", "accuracy", "shapes", "special-values", "subnormals", "layouts", "determinism", "statelessness",
        "accumulation", "memory", "gradients", "provenance"})
    EXPECT_GE(per_gate[gate], 2) << gate;
}

TEST(Corpus, EveryOpHasACorrectControl) {
  std::set<std::string> ops;
  for (const std::string& m : find_manifests(e2e::source_dir() + "/corpus/controls")) {
    std::string error;
    auto manifest = load_manifest(m, &error);
    ASSERT_TRUE(manifest) << error;
    EXPECT_EQ(manifest->expect.value("verdict", ""), "pass") << m;
    ops.insert(manifest->op);
  }
  for (const std::string& op : oracle_ids()) EXPECT_TRUE(ops.count(op)) << "no control for " << op;
}

}  // namespace
