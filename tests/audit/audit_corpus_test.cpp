// Tests of what an audit finds in a corpus (manifests, modules, bad entries) and how it shards it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>

#include "../test_files.h"
#include "../../src/audit/audit_lane.h"
#include "gauntlet/audit/audit.h"
#include "gauntlet/build/builder.h"

using namespace gauntlet;

namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char name[] = "/tmp/gauntlet-corpus-XXXXXX";
    path = mkdtemp(name);
  }
  ~TempDir() { gauntlet::testing::remove_tree(path); }
};

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// Sets environment variables for one test and restores them after.
struct Env {
  std::map<std::string, std::optional<std::string>> saved;
  void set(const std::string& k, const std::string& v) {
    if (!saved.count(k)) saved[k] = getenv(k.c_str()) ? std::optional<std::string>(getenv(k.c_str())) : std::nullopt;
    setenv(k.c_str(), v.c_str(), 1);
  }
  void unset(const std::string& k) {
    if (!saved.count(k)) saved[k] = getenv(k.c_str()) ? std::optional<std::string>(getenv(k.c_str())) : std::nullopt;
    unsetenv(k.c_str());
  }
  ~Env() {
    for (auto& [k, v] : saved) v ? setenv(k.c_str(), v->c_str(), 1) : unsetenv(k.c_str());
  }
};

void clear_shard_env(Env& env) {
  for (const char* k : {"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_COUNT", "JOB_COMPLETION_INDEX",
                        "GAUNTLET_SHARD_COUNT"})
    env.unset(k);
}

}  // namespace

TEST(AuditCorpus, FindsManifestsModulesAndRecordsBadEntries) {
  TempDir t;
  const std::string src = std::string(GAUNTLET_SOURCE_DIR) + "/corpus";
  mkdir((t.path + "/sub").c_str(), 0755);
  write(t.path + "/relu.cpp", "// a kernel\n");
  write(t.path + "/relu.json", R"({"op": "relu", "source": "relu.cpp"})");
  write(t.path + "/sub/twin.json", R"({"op": "relu", "source": "../relu.cpp", "dtypes": ["float32"]})");
  write(t.path + "/broken.json", R"({"op": "relu", "source": )");
  write(t.path + "/nosource.json", R"({"op": "relu", "source": "gone.cpp"})");
  write(t.path + "/stray.cu", "__global__ void k() {}\n");
  write(t.path + "/notes.txt", "ignored\n");
  write(t.path + "/sub/helper.py", "print('not a module')\n");
  symlink("/nonexistent/target.json", (t.path + "/dangling.json").c_str());
  // A module named by a manifest is that manifest's kernel; a mapped KernelBench module is its own.
  write(t.path + "/mine.py", "class ModelNew:\n  pass\n");
  write(t.path + "/mine.json", R"({"op": "softmax", "source": "mine.py", "entry": "ModelNew", "attrs": {"dim": -1}})");
  write(t.path + "/23_Softmax.py", "import torch\nclass ModelNew(torch.nn.Module):\n  pass\n");

  std::string error;
  auto entries = discover_corpus(t.path, t.path + "/work", &error);
  ASSERT_TRUE(entries) << error;
  std::map<std::string, CorpusEntry> by;
  for (const CorpusEntry& e : *entries) by[e.entry] = e;
  std::set<std::string> names;
  for (const auto& [n, e] : by) names.insert(n);
  EXPECT_EQ(names, (std::set<std::string>{"relu.json", "sub/twin.json", "broken.json", "nosource.json", "stray.cu",
                                          "sub/helper.py", "dangling.json", "mine.json", "23_Softmax.py"}));
  EXPECT_EQ(entries->size(), names.size());
  for (const char* ok : {"relu.json", "sub/twin.json", "mine.json", "23_Softmax.py"}) {
    EXPECT_TRUE(by[ok].manifest) << ok << ": " << by[ok].error;
    EXPECT_TRUE(by[ok].error.empty()) << ok;
  }
  for (const char* bad : {"broken.json", "nosource.json", "stray.cu", "sub/helper.py", "dangling.json"}) {
    EXPECT_FALSE(by[bad].manifest) << bad;
    EXPECT_FALSE(by[bad].error.empty()) << bad;
    EXPECT_EQ(by[bad].kernel_hash.size(), 64u) << bad;
  }
  EXPECT_NE(by["nosource.json"].error.find("gone.cpp"), std::string::npos) << by["nosource.json"].error;
  EXPECT_EQ(by["23_Softmax.py"].manifest->op, "softmax");
  // One source, two contracts: the same kernel hash, different manifest hashes.
  EXPECT_EQ(by["relu.json"].kernel_hash, sha256_file_hex(t.path + "/relu.cpp"));
  EXPECT_EQ(by["relu.json"].kernel_hash, by["sub/twin.json"].kernel_hash);
  EXPECT_NE(by["relu.json"].manifest_hash, by["sub/twin.json"].manifest_hash);
  // Deterministic: the same entries and keys a second time.
  auto again = discover_corpus(t.path, t.path + "/work", &error);
  ASSERT_TRUE(again);
  for (size_t i = 0; i < entries->size(); ++i) EXPECT_EQ((*entries)[i].kernel_hash, (*again)[i].kernel_hash);
}

TEST(AuditCorpus, SingleFilesAndJsonl) {
  TempDir t;
  std::string error;
  const std::string corpus = std::string(GAUNTLET_SOURCE_DIR) + "/corpus";
  auto one = discover_corpus(corpus + "/controls/relu.json", t.path, &error);
  ASSERT_TRUE(one) << error;
  ASSERT_EQ(one->size(), 1u);
  EXPECT_TRUE((*one)[0].manifest);
  write(t.path + "/pairs.jsonl",
        "{\"name\": \"23_Softmax\", \"level\": 1, \"candidate\": \"class ModelNew:\\n  pass\\n\"}\n"
        "not json\n");
  auto lines = discover_corpus(t.path + "/pairs.jsonl", t.path + "/work", &error);
  ASSERT_TRUE(lines) << error;
  ASSERT_EQ(lines->size(), 2u);
  EXPECT_EQ((*lines)[0].entry, t.path + "/pairs.jsonl:1");
  EXPECT_TRUE((*lines)[0].manifest) << (*lines)[0].error;
  EXPECT_EQ((*lines)[1].entry, t.path + "/pairs.jsonl:2");
  EXPECT_NE((*lines)[1].error.find("malformed JSON"), std::string::npos) << (*lines)[1].error;
  EXPECT_FALSE(discover_corpus(t.path + "/missing", t.path, &error));
  EXPECT_NE(error.find("missing"), std::string::npos);
  write(t.path + "/kernel.cpp", "");
  EXPECT_FALSE(discover_corpus(t.path + "/kernel.cpp", t.path, &error));
}

// A CUDA kernel in a lane runs --gpu-gate-jobs gates at once (4 by default, as verify --gpu-jobs),
// so an audit on one GPU keeps 16 children in flight, not 4; CPU gates keep their own rule.
TEST(AuditLanes, CudaKernelsRunGpuGateJobsGatesAtOnceInEveryLane) {
  AuditOptions o;
  o.jobs = 6;
  EXPECT_EQ(o.gpu_gate_jobs, 4);
  VerifyOptions cpu_lane, gpu_lane;
  set_lane_gate_jobs(o, /*host_lock=*/true, &cpu_lane);
  set_lane_gate_jobs(o, /*host_lock=*/false, &gpu_lane);
  EXPECT_EQ(cpu_lane.jobs, 6);
  EXPECT_EQ(gpu_lane.jobs, 1);
  EXPECT_EQ(cpu_lane.gpu_jobs, 4);
  EXPECT_EQ(gpu_lane.gpu_jobs, 4);
  o.gpu_gate_jobs = 1;  // --gpu-gate-jobs 1: a kernel's gates one after another, as before
  set_lane_gate_jobs(o, false, &gpu_lane);
  EXPECT_EQ(gpu_lane.gpu_jobs, 1);
  o.gpu_gate_jobs = 0;  // never below one
  set_lane_gate_jobs(o, false, &gpu_lane);
  EXPECT_EQ(gpu_lane.gpu_jobs, 1);
}

TEST(AuditLanes, GpuLanesAreDealtOverTheGpusBeforeAnyGetsASecond) {
  // Three CUDA kernels on --gpus 0,1 with four lanes per GPU: both GPUs busy.
  EXPECT_EQ(gpu_lane_plan({0, 1}, 4, 3), (std::vector<int>{0, 1, 0}));
  EXPECT_EQ(gpu_lane_plan({0, 1}, 2, 10), (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(gpu_lane_plan({3}, 4, 10), (std::vector<int>{3, 3, 3, 3}));
  EXPECT_EQ(gpu_lane_plan({0, 1}, 0, 10), (std::vector<int>{0, 1}));  // at least one lane per GPU
  EXPECT_TRUE(gpu_lane_plan({0, 1}, 4, 0).empty());                    // no CUDA kernel: no lane
  EXPECT_TRUE(gpu_lane_plan({}, 4, 5).empty());
}

TEST(AuditShard, ParsesIOverN) {
  std::string error;
  auto s = parse_shard("2/5", &error);
  ASSERT_TRUE(s) << error;
  EXPECT_EQ(s->index, 2);
  EXPECT_EQ(s->count, 5);
  for (const char* bad : {"5/5", "1/0", "-1/3", "1", "a/b", "1/3/4", "", "/3", "1/"}) {
    error.clear();
    EXPECT_FALSE(parse_shard(bad, &error)) << bad;
    EXPECT_FALSE(error.empty()) << bad;
  }
}

TEST(AuditShard, EveryHashInExactlyOneShardAndBalanced) {
  const int n = 4;
  std::vector<int> counts(n, 0);
  for (int i = 0; i < 4000; ++i) {
    const std::string h = sha256_hex("kernel " + std::to_string(i));
    const int s = shard_of(h, n);
    ASSERT_GE(s, 0);
    ASSERT_LT(s, n);
    EXPECT_EQ(s, shard_of(h, n));  // deterministic
    ++counts[size_t(s)];
  }
  for (int c : counts) EXPECT_NEAR(c, 1000, 150);
  EXPECT_EQ(shard_of(sha256_hex("x"), 1), 0);
  // A fixed hash lands in a fixed shard on every machine.
  EXPECT_EQ(shard_of("00000000000000070000", 4), 3);
}

TEST(AuditShard, FromSlurmAndKubernetesEnvironment) {
  Env env;
  clear_shard_env(env);
  std::string error;
  auto none = shard_from_environment(0, &error);
  ASSERT_TRUE(none) << error;
  EXPECT_EQ(none->count, 1);

  env.set("SLURM_ARRAY_TASK_ID", "5");
  env.set("SLURM_ARRAY_TASK_MIN", "3");
  env.set("SLURM_ARRAY_TASK_COUNT", "4");
  auto slurm = shard_from_environment(0, &error);
  ASSERT_TRUE(slurm) << error;
  EXPECT_EQ(slurm->index, 2);
  EXPECT_EQ(slurm->count, 4);
  env.unset("SLURM_ARRAY_TASK_COUNT");
  EXPECT_FALSE(shard_from_environment(0, &error));
  EXPECT_NE(error.find("SLURM_ARRAY_TASK_COUNT"), std::string::npos) << error;
  env.set("SLURM_ARRAY_TASK_COUNT", "2");  // id 5 - min 3 = 2, not below 2
  EXPECT_FALSE(shard_from_environment(0, &error));

  clear_shard_env(env);
  env.set("JOB_COMPLETION_INDEX", "1");
  EXPECT_FALSE(shard_from_environment(0, &error));
  EXPECT_NE(error.find("--shard-count"), std::string::npos) << error;
  auto k8s = shard_from_environment(3, &error);
  ASSERT_TRUE(k8s) << error;
  EXPECT_EQ(k8s->index, 1);
  EXPECT_EQ(k8s->count, 3);
  env.set("GAUNTLET_SHARD_COUNT", "2");
  auto k8s_env = shard_from_environment(0, &error);
  ASSERT_TRUE(k8s_env) << error;
  EXPECT_EQ(k8s_env->count, 2);
  env.set("JOB_COMPLETION_INDEX", "x");
  EXPECT_FALSE(shard_from_environment(0, &error));
}

// A symlink back up the tree (and a second link to a folder already walked) is walked once: the
// corpus's entries, not one per path through the cycle (issue 17: 12 files became 372 entries).
TEST(AuditCorpus, SymlinkCyclesAreWalkedOnce) {
  TempDir t;
  mkdir((t.path + "/sub").c_str(), 0755);
  write(t.path + "/relu.cpp", "// a kernel\n");
  write(t.path + "/relu.json", R"({"op": "relu", "source": "relu.cpp"})");
  write(t.path + "/sub/twin.json", R"({"op": "relu", "source": "../relu.cpp", "dtypes": ["float32"]})");
  ASSERT_EQ(symlink("..", (t.path + "/sub/up").c_str()), 0);
  ASSERT_EQ(symlink(t.path.c_str(), (t.path + "/sub/root").c_str()), 0);
  ASSERT_EQ(symlink("sub", (t.path + "/again").c_str()), 0);
  std::string error;
  auto entries = discover_corpus(t.path, t.path + "/work", &error);
  ASSERT_TRUE(entries) << error;
  std::multiset<std::string> names;
  for (const CorpusEntry& e : *entries) names.insert(e.entry);
  EXPECT_EQ(names, (std::multiset<std::string>{"relu.json", "sub/twin.json"}));
}
