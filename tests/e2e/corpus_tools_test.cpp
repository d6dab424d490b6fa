// End to end: tools/corpus/kernelbench_jsonl.py builds an audit JSONL from a KernelBench-shaped
// checkout (candidates paired with their problems, the authors' recorded numbers kept), and the
// real binary audits what it wrote, the line's name and fields carried into the record.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <nlohmann/json.hpp>

#include "e2e_util.h"

using namespace gauntlet::e2e;

namespace {

struct Shell {
  int exit_code = -1;
  std::string out;  // stdout and stderr
};

Shell sh(const std::string& command) {
  Shell r;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) r.out.append(buf, n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

const char* kProblem = R"PY(import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
def get_inputs():
    return [torch.randn(4, 64)]
def get_init_inputs():
    return []
)PY";

const char* kCandidate = R"PY(import torch
class ModelNew(torch.nn.Module):
    def forward(self, x):
        return x.clamp_min(0.0)
)PY";

std::string tool() { return "python3 " + source_dir() + "/tools/corpus/kernelbench_jsonl.py"; }

std::vector<nlohmann::json> read_jsonl(const std::string& path) {
  std::istringstream lines(read_file(path));
  std::string line;
  std::vector<nlohmann::json> out;
  while (std::getline(lines, line)) out.push_back(nlohmann::json::parse(line));
  return out;
}

}  // namespace

TEST(CorpusTools, KernelbenchJsonlPairsCandidatesAndTheAuditKeepsTheirFields) {
  const std::string root = temp_dir();
  for (const char* d : {"/KernelBench", "/KernelBench/level1", "/triton_runs", "/triton_runs/level1_triton",
                        "/triton_runs/level1_triton/kernels"})
    mkdir((root + d).c_str(), 0755);
  write_file(root + "/KernelBench/level1/19_ReLU.py", kProblem);
  write_file(root + "/triton_runs/level1_triton/kernels/level1_problem19_triton.py", kCandidate);
  write_file(root + "/triton_runs/level1_triton/kernels/level1_problem77_triton.py", kCandidate);  // no problem 77
  write_file(root + "/triton_runs/level1_triton/results.jsonl",
             "{\"level\": 1, \"problem_id\": 19, \"speedup\": 1.5, \"runtime_triton_stats\": {\"hardware\": \"NVIDIA H200\"}}\n"
             "not json\n");
  const std::string jsonl = root + "/pairs.jsonl";
  Shell r = sh(tool() + " --checkout " + root + " --out " + jsonl + " --tag demo");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("1 pairs written"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 candidates unpaired"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("level1_problem77_triton.py: no single KernelBench/level1/77_*.py"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("results.jsonl:2: skipped"), std::string::npos) << r.out;
  const std::vector<nlohmann::json> got = read_jsonl(jsonl);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0]["name"], "19_ReLU.py");
  EXPECT_EQ(got[0]["level"], 1);
  EXPECT_EQ(got[0]["problem_id"], 19);
  EXPECT_EQ(got[0]["ref"], kProblem);
  EXPECT_EQ(got[0]["candidate"], kCandidate);
  EXPECT_EQ(got[0]["recorded_speedup"], 1.5);
  EXPECT_EQ(got[0]["recorded_hardware"], "NVIDIA H200");
  EXPECT_EQ(got[0]["tag"], "demo");

  // Not a checkout, and no candidates: usage errors.
  EXPECT_EQ(sh(tool() + " --checkout " + root + "/triton_runs --out " + root + "/x.jsonl").exit_code, 2);
  EXPECT_EQ(sh(tool() + " --checkout " + root + " --kernels 'none/*.py' --out " + root + "/x.jsonl").exit_code, 2);

  REQUIRE_PYTHON_TORCH();
  auto a = run_gauntlet({"audit", jsonl, "--gates", "contract,accuracy", "--db", root + "/a.db", "--json",
                         root + "/a.json", "--work-dir", root + "/work", "--replay-dir", root + "/replays"});
  EXPECT_EQ(a.exit_code, 0) << a.out << a.err;
  const nlohmann::json records = nlohmann::json::parse(read_file(root + "/a.json"), nullptr, false);
  ASSERT_TRUE(records.is_array() && records.size() == 1) << a.out << a.err;
  const std::string text = records[0].dump();
  EXPECT_EQ(records[0]["verdict"], "pass") << text;
  EXPECT_NE(text.find("19_ReLU.py"), std::string::npos) << text;
  EXPECT_NE(text.find("recorded_speedup"), std::string::npos) << text;
}

// A leaderboard checkout (docs/assets/data.json, problems/lL_pN.py, solutions/FILE.py) is read from
// its index: each listed solution paired with its problem, the model and its speedup kept; a
// listed file that is missing is said and skipped; --levels keeps the levels asked for.
TEST(CorpusTools, KernelbenchJsonlReadsALeaderboardFromItsIndex) {
  const std::string root = temp_dir();
  for (const char* d : {"/docs", "/docs/assets", "/docs/assets/problems", "/docs/assets/solutions"})
    mkdir((root + d).c_str(), 0755);
  write_file(root + "/docs/assets/problems/l1_p19.py", kProblem);
  write_file(root + "/docs/assets/problems/l2_p3.py", kProblem);
  write_file(root + "/docs/assets/solutions/abc123.py", kCandidate);
  write_file(root + "/docs/assets/solutions/def456.py", kCandidate);
  write_file(root + "/docs/assets/data.json",
             R"({"Level 1: 19_ReLU": [{"display_name": "model-a", "torch_speedup": 0.5, "file": "abc123"},
                                      {"display_name": "model-b", "torch_speedup": 2, "file": "gone"}],
                 "Level 2: 3_Relu_Again": [{"display_name": "model-c", "file": "def456"}],
                 "Level 3: 50_Empty": []})");
  const std::string jsonl = root + "/pairs.jsonl";
  Shell r = sh(tool() + " --checkout " + root + " --out " + jsonl);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("2 pairs written"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 candidates unpaired"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Level 1: 19_ReLU: solution 'gone'"), std::string::npos) << r.out;
  const std::vector<nlohmann::json> got = read_jsonl(jsonl);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0]["name"], "19_ReLU");
  EXPECT_EQ(got[0]["level"], 1);
  EXPECT_EQ(got[0]["problem_id"], 19);
  EXPECT_EQ(got[0]["model"], "model-a");
  EXPECT_EQ(got[0]["recorded_torch_speedup"], 0.5);
  EXPECT_EQ(got[0]["candidate"], kCandidate);
  EXPECT_EQ(got[0]["ref"], kProblem);
  EXPECT_EQ(got[1]["name"], "3_Relu_Again");
  EXPECT_FALSE(got[1].contains("recorded_torch_speedup"));

  Shell two = sh(tool() + " --checkout " + root + " --levels 2 --out " + jsonl);
  ASSERT_EQ(two.exit_code, 0) << two.out;
  EXPECT_NE(two.out.find("1 pairs written"), std::string::npos) << two.out;
  EXPECT_EQ(sh(tool() + " --checkout " + root + " --levels x --out " + jsonl).exit_code, 2);
  write_file(root + "/docs/assets/data.json", "[1, 2]");
  EXPECT_EQ(sh(tool() + " --checkout " + root + " --out " + jsonl).exit_code, 2);
}

TEST(CorpusTools, KernelbenchJsonlSamplesEachProblemAndSpreadsOverProblems) {
  // Problem 19 has three solutions, 20 and 21 one each: --per-problem 2 keeps two of 19's;
  // --spread puts every problem's first before any second, so an audit cut short sees all three.
  const std::string root = temp_dir();
  for (const char* d : {"/docs", "/docs/assets", "/docs/assets/problems", "/docs/assets/solutions"})
    mkdir((root + d).c_str(), 0755);
  for (const char* p : {"l1_p19.py", "l1_p20.py", "l1_p21.py"}) write_file(root + "/docs/assets/problems/" + p, kProblem);
  for (const char* f : {"a1", "a2", "a3", "b1", "c1"}) write_file(root + "/docs/assets/solutions/" + f + ".py", kCandidate);
  write_file(root + "/docs/assets/data.json",
             R"({"Level 1: 19_ReLU": [{"file": "a1"}, {"file": "a2"}, {"file": "a3"}],
                 "Level 1: 20_LeakyReLU": [{"file": "b1"}], "Level 1: 21_Sigmoid": [{"file": "c1"}]})");
  const std::string jsonl = root + "/pairs.jsonl";
  auto files = [&] {
    std::string order;
    for (const nlohmann::json& l : read_jsonl(jsonl)) order += l["kernel_file"].get<std::string>().substr(22, 2) + " ";
    return order;
  };
  ASSERT_EQ(sh(tool() + " --checkout " + root + " --out " + jsonl).exit_code, 0);
  EXPECT_EQ(files(), "a1 a2 a3 b1 c1 ");
  Shell r = sh(tool() + " --checkout " + root + " --per-problem 2 --spread --out " + jsonl);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("4 pairs written"), std::string::npos) << r.out;
  EXPECT_EQ(files(), "a1 b1 c1 a2 ");
  ASSERT_EQ(sh(tool() + " --checkout " + root + " --per-problem 1 --out " + jsonl).exit_code, 0);
  EXPECT_EQ(files(), "a1 b1 c1 ");
  EXPECT_EQ(sh(tool() + " --checkout " + root + " --per-problem -1 --out " + jsonl).exit_code, 2);
  // --problems picks problem ids (ranges allowed); a malformed list is a usage error.
  ASSERT_EQ(sh(tool() + " --checkout " + root + " --problems 20-21 --out " + jsonl).exit_code, 0);
  EXPECT_EQ(files(), "b1 c1 ");
  ASSERT_EQ(sh(tool() + " --checkout " + root + " --problems 19,21 --per-problem 1 --out " + jsonl).exit_code, 0);
  EXPECT_EQ(files(), "a1 c1 ");
  EXPECT_EQ(sh(tool() + " --checkout " + root + " --problems 21-19 --out " + jsonl).exit_code, 2);
  EXPECT_EQ(sh(tool() + " --checkout " + root + " --problems x --out " + jsonl).exit_code, 2);
}

// audit_summary.py, the docs' figures of an audit: a gate whose status is harness-error counts as
// one (it was missed when only error/harness-error was looked for), and a resumed run's rate counts
// only the kernels it completed (--before: the same database's report before the run).
TEST(CorpusTools, AuditSummaryCountsHarnessErrorsAndOnlyTheKernelsThisRunCompleted) {
  const std::string dir = temp_dir();
  const std::string gate_pass = "{\"name\": \"accuracy\", \"status\": \"pass\", \"seconds\": 2, "
                                "\"evidence\": {\"time\": {\"oracle_seconds\": 3, \"inputs_seconds\": 0.25}}}";
  const std::string gate_harness = "{\"name\": \"contract\", \"status\": \"harness-error\", \"category\": \"harness-error\", \"seconds\": 1}";
  auto record = [](const std::string& hash, bool complete, const std::string& gate, const std::string& error = "") {
    return "{\"kernel_hash\": \"" + hash + "\", \"entry\": \"pairs.jsonl:" + hash + "\", \"complete\": " +
           (complete ? "true" : "false") + ", \"verdict\": \"" + (complete ? "pass" : "incomplete") +
           "\", \"entry_error\": \"" + error + "\", \"gates\": [" + gate + "]}";
  };
  write_file(dir + "/before.json", "[" + record("a", true, gate_pass) + ", " + record("b", false, gate_pass) + "]");
  write_file(dir + "/after.json", "[" + record("a", true, gate_pass) + ", " + record("b", true, gate_harness) + ", " +
                                      record("c", true, "", "not verifiable: too big") + "]");
  const std::string tool = "python3 " + source_dir() + "/tools/corpus/audit_summary.py ";
  Shell r = sh(tool + dir + "/after.json --wall 3600 --before " + dir + "/before.json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("harness errors by gate: contract 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 kernels completed by this run (1 verifiable), 2 per hour (1 verifiable)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("oracle 3"), std::string::npos) << r.out;  // the one record that has gates with times
  Shell all = sh(tool + dir + "/after.json --wall 3600");
  EXPECT_NE(all.out.find("3 kernels completed by this run"), std::string::npos) << all.out;
  Shell bad = sh(tool + dir + "/missing.json");
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
}
