// Tests of tools/gate_table (docs/gate-table.md's generator) and of the committed table's agreement with the corpus.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <dirent.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "e2e_util.h"
#include "gauntlet/common/wire.h"

using namespace gauntlet::e2e;

namespace {

int run_table(const std::string& args) {
  const int rc = std::system((std::string(GAUNTLET_GATE_TABLE_BIN) + " " + args + " >/dev/null 2>&1").c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

nlohmann::json kernel(const std::string& manifest, const std::string& verdict, nlohmann::json gates,
                      nlohmann::json expected, const std::string& kb) {
  return {{"manifest", manifest}, {"op", "sum"},    {"verdict", verdict}, {"seed", 1},
          {"gates", gates},       {"selftest", {{"expected", expected}, {"mismatches", nlohmann::json::array()}, {"kbcheck", kb}}}};
}

TEST(GateTable, RendersEachGatesBugsWithBothVerdicts) {
  const std::string dir = temp_dir();
  nlohmann::json report = nlohmann::json::array();
  report.push_back(kernel("controls/sum.json", "pass",
                          {{{"name", "accuracy"}, {"status", "pass"}}, {{"name", "gradients"}, {"status", "skip"}}},
                          {{"verdict", "pass"}}, ""));
  report.push_back(kernel("bugs/provenance/sum_library_call.json", "fail",
                          {{{"name", "accuracy"}, {"status", "pass"}},
                           {{"name", "provenance"}, {"status", "fail"}, {"category", "wrong-result"}},
                           {{"name", "memory"}, {"status", "fail"}, {"category", "wrong-result"}}},
                          {{"verdict", "fail"},
                           // accumulation may fail or pass (a list): no promise, so no row under it.
                           {"gates", {{"provenance", {{"status", "fail"}}},
                                      {"memory", {{"status", "fail"}}},
                                      {"accumulation", {{"status", {"fail", "pass"}}}}}},
                           {"bug", "The kernel calls at::sum instead of summing. The rest of the story is in the manifest."}},
                          "accept"));
  write_file(dir + "/report.json", report.dump());
  ASSERT_EQ(run_table(dir + "/report.json -o " + dir + "/table.md"), 0);
  const std::string md = read_file(dir + "/table.md");
  EXPECT_NE(md.find("Correct controls: 1 of 1 pass every gate"), std::string::npos) << md;
  EXPECT_NE(md.find("| provenance | 1 | 1 | 1 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| accumulation | 0 | 0 | 0 |"), std::string::npos) << md;
  EXPECT_NE(md.find("## provenance"), std::string::npos);
  // The row: the bug's first sentence, the KernelBench-style word, gauntlet's, and the other gate.
  EXPECT_NE(md.find("| `bugs/provenance/sum_library_call.json` | sum | The kernel calls at::sum instead of summing. | accept | fail (wrong-result) | memory |"),
            std::string::npos)
      << md;
}

// A second report adds the kernels the first skipped (fp8_matmul's, from a GPU host whose PyTorch
// has float8), and says so; a kernel in both keeps the first report's row.
TEST(GateTable, LaterReportsAddOnlyTheKernelsTheFirstLacks) {
  const std::string dir = temp_dir();
  const nlohmann::json declared = {{"verdict", "fail"}, {"gates", {{"accuracy", {{"status", "fail"}}}}},
                                   {"bug", "Sums in float16. More in the manifest."}};
  const nlohmann::json fails = {{{"name", "accuracy"}, {"status", "fail"}, {"category", "wrong-result"}}};
  const nlohmann::json passes = {{{"name", "accuracy"}, {"status", "pass"}}};
  nlohmann::json first = nlohmann::json::array(), second = nlohmann::json::array();
  first.push_back(kernel("bugs/accuracy/a.json", "fail", fails, declared, "accept"));
  // The same kernel again in the second report, passing: must not replace the first's row.
  second.push_back(kernel("bugs/accuracy/a.json", "pass", passes, declared, "reject"));
  second.push_back(kernel("bugs/accuracy/b.json", "fail", fails, declared, "accept"));
  write_file(dir + "/first.json", first.dump());
  write_file(dir + "/second.json", second.dump());
  ASSERT_EQ(run_table(dir + "/first.json " + dir + "/second.json -o " + dir + "/table.md"), 0);
  const std::string md = read_file(dir + "/table.md");
  EXPECT_NE(md.find("- Planted bugs: 2; the KernelBench-style check accepts 2 of them."), std::string::npos) << md;
  EXPECT_NE(md.find("| accuracy | 2 | 2 | 2 |"), std::string::npos) << md;
  EXPECT_NE(md.find("- From `" + dir + "/second.json` (kernels the first report skipped): `bugs/accuracy/b.json`."),
            std::string::npos)
      << md;
  EXPECT_EQ(md.find("| `bugs/accuracy/a.json` | sum | Sums in float16. | reject"), std::string::npos) << md;
  // An unreadable second report is an error, not a table without its rows.
  EXPECT_EQ(run_table(dir + "/first.json " + dir + "/missing.json -o " + dir + "/t2.json"), 2);
}

// Kernels a report ran on a GPU get the CUDA section, named with their GPU, and stay out of the CPU
// corpus' counts; a GPU bug's row says which gates it must fail and which gauntlet failed.
TEST(GateTable, GpuKernelsGetTheirOwnSectionApartFromTheCpuCounts) {
  const std::string dir = temp_dir();
  const nlohmann::json declared = {{"verdict", "fail"}, {"gates", {{"shapes", {{"status", "fail"}}}}},
                                   {"bug", "Drops the last partial block. More in the manifest."}};
  const nlohmann::json fails = {{{"name", "shapes"}, {"status", "fail"}, {"category", "wrong-result"}},
                                {{"name", "accuracy"}, {"status", "pass"}}};
  const nlohmann::json gpu_env = {{"device", "cuda"}, {"gpu", {{"name", "Test GPU 9000"}}}};
  nlohmann::json cpu = nlohmann::json::array(), gpu = nlohmann::json::array();
  cpu.push_back(kernel("bugs/shapes/f.json", "fail", fails, declared, "accept"));
  nlohmann::json bug = kernel("bugs_cuda/shapes/f.json", "fail", fails, declared, "reject");
  bug["environment"] = gpu_env;
  nlohmann::json control = kernel("controls_cuda/f.json", "pass", {{{"name", "shapes"}, {"status", "fail"}}},
                                  {{"verdict", "pass"}}, "");
  control["environment"] = gpu_env;
  control["selftest"]["mismatches"] = {"shapes: expected pass, got fail"};
  gpu.push_back(bug);
  gpu.push_back(control);
  write_file(dir + "/cpu.json", cpu.dump());
  write_file(dir + "/gpu.json", gpu.dump());
  ASSERT_EQ(run_table(dir + "/cpu.json " + dir + "/gpu.json -o " + dir + "/table.md"), 0);
  const std::string md = read_file(dir + "/table.md");
  // The CPU counts hold the CPU bug alone, and the added-kernels line names no GPU kernel.
  EXPECT_NE(md.find("- Planted bugs: 1; the KernelBench-style check accepts 1 of them."), std::string::npos) << md;
  EXPECT_NE(md.find("| shapes | 1 | 1 | 1 |"), std::string::npos) << md;
  EXPECT_EQ(md.find("kernels the first report skipped"), std::string::npos) << md;
  const size_t section = md.find("\n## CUDA kernels\n");
  ASSERT_NE(section, std::string::npos) << md;
  EXPECT_GT(section, md.find("\n## shapes\n")) << "the GPU section comes after every gate's section";
  const std::string body = md.substr(section);
  EXPECT_NE(body.find("from `" + dir + "/gpu.json` (GPU: Test GPU 9000)"), std::string::npos) << body;
  EXPECT_NE(body.find("- Correct controls: 0 of 1 pass every gate."), std::string::npos) << body;
  EXPECT_NE(body.find("- Planted bugs: 1; the KernelBench-style check accepts 0 of them."), std::string::npos) << body;
  EXPECT_NE(body.find("- Kernels whose verdict differs from their manifest's declaration: 1."), std::string::npos);
  EXPECT_NE(body.find("| `bugs_cuda/shapes/f.json` | sum | Drops the last partial block. | shapes | shapes | reject | "
                      "Test GPU 9000 |"),
            std::string::npos)
      << body;
  EXPECT_NE(body.find("| `controls_cuda/f.json` | sum | control (correct) | - | shapes (NOT as declared) |"),
            std::string::npos)
      << body;
}

TEST(GateTable, BadInputGetsOneLineErrorAndExit2) {
  const std::string dir = temp_dir();
  EXPECT_EQ(run_table(dir + "/missing.json"), 2);
  write_file(dir + "/bad.json", "{not json");
  EXPECT_EQ(run_table(dir + "/bad.json"), 2);
  write_file(dir + "/obj.json", "{}");
  EXPECT_EQ(run_table(dir + "/obj.json"), 2);
  EXPECT_EQ(run_table(""), 2);
}

void bug_manifests(const std::string& dir, const std::string& rel, std::vector<std::string>* out) {
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  while (dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    if (e->d_type == DT_DIR) bug_manifests(dir + "/" + n, rel + n + "/", out);
    else if (n.size() > 5 && n.substr(n.size() - 5) == ".json") out->push_back(rel + n);
  }
  closedir(d);
}

// The committed table was generated from the current corpus: every planted bug has its row under
// every gate its manifest declares failing (regenerate with tools/gate-table.sh).
TEST(GateTable, CommittedTableCoversEveryPlantedBug) {
  const std::string md = read_file(source_dir() + "/docs/gate-table.md");
  ASSERT_FALSE(md.empty()) << "docs/gate-table.md is missing: run tools/gate-table.sh";
  std::vector<std::string> manifests;
  bug_manifests(source_dir() + "/corpus/bugs", "bugs/", &manifests);
  ASSERT_GE(manifests.size(), 24u);
  for (const std::string& m : manifests) {
    std::ifstream in(source_dir() + "/corpus/" + m);
    const nlohmann::json j = nlohmann::json::parse(in);
    // A bug whose every dtype this LibTorch lacks (fp8_matmul's float8_e4m3fn before PyTorch 2.1)
    // is skipped by the selftest the table is made from: it has no row on such a machine.
    std::vector<gauntlet::DType> dtypes;
    for (const std::string& name : j.value("dtypes", std::vector<std::string>{}))
      if (const auto d = gauntlet::dtype_from_name(name)) dtypes.push_back(*d);
    if (gauntlet::wire::none_available(dtypes)) continue;
    const nlohmann::json declared = j["expect"].value("gates", nlohmann::json::object());
    for (const auto& [gate, rule] : declared.items()) {
      // A gate that must fail has a row; a status list (["fail", "pass"]) is no such promise.
      const nlohmann::json status = rule.value("status", nlohmann::json());
      if (!status.is_string() || status.get<std::string>() != "fail") continue;
      const size_t section = md.find("\n## " + gate + "\n");
      ASSERT_NE(section, std::string::npos) << "no section for gate " << gate;
      const size_t next = md.find("\n## ", section + 1);
      const std::string body = md.substr(section, next == std::string::npos ? std::string::npos : next - section);
      EXPECT_NE(body.find("`" + m + "`"), std::string::npos) << m << " missing under " << gate;
    }
  }
  EXPECT_EQ(md.find("NOT as declared"), std::string::npos) << "the committed table records a mismatch";
}

// Issue 20's CUDA twins, measured on a GPU host (tools/gpu/lists/issue20-cuda.txt, the device
// call's list), each have their row in the committed table's CUDA section.
TEST(GateTable, CommittedTableHasEveryIssue20CudaTwin) {
  const std::string md = read_file(source_dir() + "/docs/gate-table.md");
  const size_t section = md.find("\n## CUDA kernels\n");
  ASSERT_NE(section, std::string::npos) << "docs/gate-table.md has no CUDA section: run tools/gate-table.sh";
  const std::string body = md.substr(section);
  std::ifstream list(source_dir() + "/tools/gpu/lists/issue20-cuda.txt");
  ASSERT_TRUE(list) << "tools/gpu/lists/issue20-cuda.txt is missing";
  int listed = 0;
  for (std::string line; std::getline(list, line);) {
    if (line.empty() || line[0] == '#') continue;
    ++listed;
    ASSERT_EQ(line.rfind("corpus/", 0), 0u) << line;
    const std::string manifest = line.substr(7);
    EXPECT_FALSE(read_file(source_dir() + "/" + line).empty()) << line << " is not in the corpus";
    EXPECT_NE(body.find("| `" + manifest + "` |"), std::string::npos) << manifest << " has no CUDA row";
  }
  EXPECT_GE(listed, 20);
}

}  // namespace
