// End to end: `gauntlet replay FILE --emit DIR` writes a reproducer that needs no gauntlet: its
// PyTorch script rebuilds the case's exact inputs (a transposed view stays one), runs the kernel
// and prints the same mismatch, with the diagnosis, after gauntlet's work files are gone.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "../test_files.h"
#include "e2e_util.h"

using namespace gauntlet::e2e;

namespace {

const std::string kCorpus = GAUNTLET_SOURCE_DIR "/corpus";

bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

// Runs DIR/repro.py with the Python the worker uses; its exit code and output.
std::pair<int, std::string> run_script(const std::string& dir) {
  const char* env = getenv("GAUNTLET_PYTHON");
  const std::string python = env && *env ? env : "/usr/bin/python3";
  const std::string log = dir + "/repro.log";
  const int status = std::system(("cd '" + dir + "' && '" + python + "' repro.py > '" + log + "' 2>&1").c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_file(log)};
}

// verify one gate of a corpus manifest, replay its failure with --emit; the reproducer folder.
std::string emitted(const std::string& manifest, const std::string& gate, const std::string& dir) {
  auto v = run_gauntlet({"verify", kCorpus + "/" + manifest, "--seed", "3", "--gates", gate, "--json", dir + "/r.json",
                         "--replay-dir", dir + "/replays", "--quiet"});
  EXPECT_EQ(v.exit_code, 1) << v.out << v.err;
  const nlohmann::json j = nlohmann::json::parse(read_file(dir + "/r.json"));
  const std::string replay = j["gates"][0]["replay"].is_string() ? j["gates"][0]["replay"].get<std::string>() : "";
  EXPECT_FALSE(replay.empty()) << j.dump(1);
  auto r = run_gauntlet({"replay", replay, "--emit", dir + "/repro"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "reproducer: " + dir + "/repro/repro.py")) << r.out;
  gauntlet::testing::remove_tree(dir + "/replays");  // the reproducer stands alone
  return dir + "/repro";
}

}  // namespace

TEST(ReplayEmit, NativeKernelScriptReproducesTheLayoutMismatch) {
  REQUIRE_PYTHON_TORCH();
  const std::string dir = temp_dir();
  const std::string repro = emitted("contracts/softmax_rows_unchecked.json", "layouts", dir);
  const nlohmann::json c = nlohmann::json::parse(read_file(repro + "/case.json"));
  EXPECT_EQ(c["kind"], "native");
  ASSERT_EQ(c["inputs"].size(), 1u);
  const nlohmann::json x = c["inputs"][0];
  // The view as gauntlet sent it: strides that are not row-major.
  EXPECT_NE(x["stride"], nlohmann::json::array({x["size"][1], 1})) << x.dump();
  auto [code, out] = run_script(repro);
  EXPECT_EQ(code, 1) << out;
  EXPECT_TRUE(contains(out, "gauntlet reproducer: op softmax, gate layouts")) << out;
  EXPECT_TRUE(contains(out, "elements wrong")) << out;
  EXPECT_TRUE(contains(out, "diagnosis: contiguous-read")) << out;
}

TEST(ReplayEmit, ModuleScriptReproducesTheMismatchWithItsDiagnosis) {
  REQUIRE_PYTHON_TORCH();
  const std::string dir = temp_dir();
  const std::string repro = emitted("modules/relu_storage_as_contiguous.json", "layouts", dir);
  auto [code, out] = run_script(repro);
  EXPECT_EQ(code, 1) << out;
  EXPECT_TRUE(contains(out, "op module, gate layouts")) << out;
  EXPECT_TRUE(contains(out, "elements wrong")) << out;
  EXPECT_TRUE(contains(out, "diagnosis: contiguous-read")) << out;
  // A right kernel on the same case: the script says so and exits 0 (it judges, not just prints).
  write_file(repro + "/kernel/relu_storage_as_contiguous.py",
             "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"
             "class ModelNew(Model):\n    pass\n"
             "def get_inputs():\n    return [torch.randn(16, 16384)]\ndef get_init_inputs():\n    return []\n");
  auto [fixed_code, fixed_out] = run_script(repro);
  EXPECT_EQ(fixed_code, 0) << fixed_out;
  EXPECT_TRUE(contains(fixed_out, "within gauntlet's tolerance")) << fixed_out;
}

TEST(ReplayEmit, AnUnwritableFolderIsOneLineAndExitTwo) {
  const std::string dir = temp_dir();
  auto v = run_gauntlet({"verify", kCorpus + "/contracts/matmul_square_unchecked.json", "--seed", "1", "--gates", "shapes",
                         "--json", dir + "/r.json", "--replay-dir", dir + "/replays", "--quiet"});
  ASSERT_EQ(v.exit_code, 1) << v.out << v.err;
  const std::string replay = nlohmann::json::parse(read_file(dir + "/r.json"))["gates"][0]["replay"];
  write_file(dir + "/file", "x");
  auto r = run_gauntlet({"replay", replay, "--emit", dir + "/file/sub"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "--emit " + dir + "/file/sub: cannot create")) << r.err;
}
