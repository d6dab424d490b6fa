// End to end: `gauntlet verify FILE.py` without a manifest (a KernelBench name maps to its schema,
// anything else is checked against its own reference Model in float64: the module oracle), and
// the unmapped planted bugs of corpus/modules each caught by their gate. Skipped, with the reason,
// where python3 or its torch is missing.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <string>
#include <nlohmann/json.hpp>

#include "e2e_util.h"

using namespace gauntlet;
using namespace gauntlet::e2e;

namespace {

const std::string kModules = source_dir() + "/corpus/modules";

// A correct module with no schema, given as a bare .py: the module oracle passes it, with the
// envelope tolerance and Model's key operators in the report, and shapes/accumulation skip with
// the reason.
TEST(ModuleOracle, CorrectUnmappedModulePassesFromABarePyFile) {
  REQUIRE_PYTHON_TORCH();
  const Verified r = verify_report({kModules + "/rmsnorm_module.py"});
  ASSERT_TRUE(r.report.is_object()) << r.log;
  EXPECT_EQ(r.exit_code, 0) << r.report.dump(1);
  EXPECT_EQ(r.report["verdict"], "pass");
  EXPECT_EQ(r.report["op"], "module");
  const nlohmann::json& oracle = r.report["environment"]["module"]["oracle"];
  EXPECT_EQ(oracle["tolerance"], "module-envelope");
  EXPECT_EQ(oracle["key_ops"], nlohmann::json::array({"aten::mean"})) << oracle.dump();
  EXPECT_EQ(oracle["reduction_estimate"], 32 * 16 * 16);
  for (const char* g : {"contract", "accuracy", "special-values", "subnormals", "layouts", "determinism",
                        "statelessness", "memory", "provenance"})
    EXPECT_EQ(report_gate(r.report, g)["status"], "pass") << g << ": " << report_gate(r.report, g).dump();
  for (const char* g : {"shapes", "accumulation"}) {
    EXPECT_EQ(report_gate(r.report, g)["status"], "skip") << g;
    EXPECT_NE(report_gate(r.report, g)["message"].get<std::string>().find("unmapped module"), std::string::npos) << g;
  }
  const std::string prov_ops = report_gate(r.report, "provenance")["evidence"]["aten_ops"].dump();
  EXPECT_NE(prov_ops.find("aten::sum"), std::string::npos) << prov_ops;
}

// A file named like a mapped KernelBench problem verifies against that problem's schema.
TEST(ModuleOracle, KernelBenchNameMapsToItsSchema) {
  REQUIRE_PYTHON_TORCH();
  const std::string dir = temp_dir() + "/level1";
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
  write_file(dir + "/19_ReLU.py",
             "import torch\nimport torch.nn as nn\n"
             "class Model(nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"
             "class ModelNew(nn.Module):\n    def forward(self, x):\n"
             "        return torch.where(x < 0, torch.zeros_like(x), x)\n"
             "def get_inputs():\n    return [torch.randn(16, 16384)]\n"
             "def get_init_inputs():\n    return []\n");
  const Verified r = verify_report({dir + "/19_ReLU.py", "--gates", "contract,accuracy"});
  ASSERT_TRUE(r.report.is_object()) << r.log;
  EXPECT_EQ(r.exit_code, 0) << r.report.dump(1);
  EXPECT_EQ(r.report["op"], "relu");
  EXPECT_FALSE(r.report["environment"]["module"].contains("oracle"));
}

// A mapped KernelBench problem's contract is its get_inputs()' exact shapes: a solution exact there
// and wrong past them (the tail a float4 loop leaves) is unsafe, with the shapes gate failing outside
// the contract, while every in-contract gate runs at the problem's own [16, 1024].
TEST(ModuleOracle, AKernelBenchProblemsContractIsItsGetInputsShapes) {
  REQUIRE_PYTHON_TORCH();
  const std::string dir = temp_dir() + "/level1";
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
  write_file(dir + "/19_ReLU.py",
             "import torch\nimport torch.nn as nn\n"
             "class Model(nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"
             "class ModelNew(nn.Module):\n    def forward(self, x):\n"
             "        y = torch.where(x < 0, torch.zeros_like(x), x)\n"
             "        y[..., (x.shape[-1] // 4) * 4:] = 0\n        return y\n"
             "def get_inputs():\n    return [torch.randn(16, 1024)]\n"
             "def get_init_inputs():\n    return []\n");
  const Verified r = verify_report({dir + "/19_ReLU.py", "--gates", "accuracy,shapes"});
  ASSERT_TRUE(r.report.is_object()) << r.log;
  EXPECT_EQ(r.exit_code, 1) << r.report.dump(1);
  EXPECT_EQ(r.report["verdict"], "unsafe") << r.report.dump(1);
  const nlohmann::json contract = r.report["environment"]["contract"];
  EXPECT_EQ(contract["bound"], true) << contract.dump();
  EXPECT_EQ(contract["dims"], nlohmann::json({{"M", 16}, {"N", 1024}})) << contract.dump();
  EXPECT_EQ(report_gate(r.report, "accuracy")["status"], "pass");
  EXPECT_EQ(report_gate(r.report, "accuracy")["scope"], "in-contract");
  EXPECT_EQ(report_gate(r.report, "shapes")["status"], "fail");
  EXPECT_EQ(report_gate(r.report, "shapes")["scope"], "out-of-contract");
  // Its in-contract cases are the problem's own shape (the accuracy gate's deciding cases are
  // not recorded on a pass; the failing shapes case is outside, one size past it).
  const std::string label = report_gate(r.report, "shapes")["message"];
  EXPECT_EQ(label.find("x=[16,1024]"), std::string::npos) << label;
  EXPECT_EQ(contract["inputs"], "x [16, 1024] float32") << contract.dump();
}

// Files written for CUDA build their inputs on the GPU (get_inputs() returning `.cuda()` tensors, a
// Model allocating with device="cuda"). The reference child is a CPU process: there those
// placements land on the CPU (python/gauntlet_worker/cpu_devices.py), so the problem's contract is
// still read. On the H200 the same file failed with "cudaGetDeviceCount ... Error 304" and every
// gate then judged the kernel on float16 and 1-element cases its problem never promised. When
// get_inputs() cannot be described at all, no gate judges the kernel: each is a harness error.
TEST(ModuleOracle, GetInputsOnCudaIsReadOnTheCpuAndAnUnreadableOneIsAHarnessError) {
  REQUIRE_PYTHON_TORCH();
  const std::string dir = temp_dir() + "/level1";
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
  write_file(dir + "/19_ReLU.py",
             "import torch\nimport torch.nn as nn\n"
             "class Model(nn.Module):\n    def forward(self, x):\n"
             "        return torch.maximum(x, torch.zeros(x.shape, dtype=x.dtype, device='cuda'))\n"
             "class ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"
             "def get_inputs():\n    return [torch.randn(16, 1024).cuda().to('cuda:0')]\n"
             "def get_init_inputs():\n    return []\n");
  // The file names CUDA, so it would be taken for a CUDA kernel; its manifest says it runs on the
  // CPU here (a machine with no GPU), and its contract is its get_inputs().
  const std::string manifest =
      R"({"op": "relu", "source": "19_ReLU.py", "entry": "ModelNew", "device": "cpu", "shapes": "get_inputs"})";
  write_file(dir + "/relu.json", manifest);
  const Verified r = verify_report({dir + "/relu.json", "--gates", "contract,accuracy"});
  ASSERT_TRUE(r.report.is_object()) << r.log;
  const nlohmann::json contract = r.report["environment"]["contract"];
  EXPECT_EQ(contract["bound"], true) << contract.dump();
  EXPECT_EQ(contract["dims"], nlohmann::json({{"M", 16}, {"N", 1024}})) << contract.dump();
  EXPECT_EQ(r.report["verdict"], "pass") << r.report.dump(1);
  EXPECT_EQ(r.exit_code, 0) << r.log;

  const std::string broken = temp_dir() + "/level1";
  ASSERT_EQ(mkdir(broken.c_str(), 0755), 0);
  write_file(broken + "/19_ReLU.py",
             "import torch\nimport torch.nn as nn\n"
             "class Model(nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"
             "class ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"
             "def get_inputs():\n    raise RuntimeError('the problem file is broken')\n"
             "def get_init_inputs():\n    return []\n");
  write_file(broken + "/relu.json", manifest);
  const Verified h = verify_report({broken + "/relu.json", "--gates", "contract,accuracy"});
  ASSERT_TRUE(h.report.is_object()) << h.log;
  EXPECT_EQ(h.report["environment"]["contract"]["described"], false) << h.report.dump(1);
  for (const char* gate : {"contract", "accuracy"}) {
    const nlohmann::json g = report_gate(h.report, gate);
    EXPECT_EQ(g["status"], "harness-error") << g.dump();
    EXPECT_NE(g["message"].get<std::string>().find("the problem file is broken"), std::string::npos) << g.dump();
  }
  EXPECT_NE(h.report["verdict"], "fail") << h.report.dump(1);
  EXPECT_NE(h.exit_code, 0) << h.log;
}

// get_inputs() with a non-tensor value (KernelBench's 5_Matrix_scalar_multiplication returns
// [A, s]): the value is the problem's, passed at its place in every call of the candidate and the
// reference, never varied. A candidate that honours it passes every gate; one that truncates it to
// an integer fails accuracy; a value that is no number is said, with its position.
TEST(ModuleOracle, NonTensorInputsArePassedAtTheirPlaces) {
  REQUIRE_PYTHON_TORCH();
  const std::string dir = temp_dir();
  const std::string problem =
      "import torch\nimport torch.nn as nn\n"
      "class Model(nn.Module):\n    def forward(self, A, s, B, flag):\n"
      "        return A * s + B if flag else A\n"
      "def get_inputs():\n    return [torch.randn(64, 48), 3.5, torch.randn(64, 48), True]\n"
      "def get_init_inputs():\n    return []\n";
  write_file(dir + "/scale_ok.py", problem +
             "class ModelNew(nn.Module):\n    def forward(self, A, s, B, flag):\n"
             "        assert isinstance(s, float) and flag is True\n"
             "        return torch.addcmul(B, A, torch.full_like(A, s))\n");
  write_file(dir + "/scale_truncated.py", problem +
             "class ModelNew(nn.Module):\n    def forward(self, A, s, B, flag):\n"
             "        return torch.addcmul(B, A, torch.full_like(A, float(int(s))))\n");
  const Verified ok = verify_report({dir + "/scale_ok.py"});
  ASSERT_TRUE(ok.report.is_object()) << ok.log;
  EXPECT_EQ(ok.report["verdict"], "pass") << ok.report.dump(1);
  EXPECT_EQ(ok.exit_code, 0) << ok.log;
  const Verified bad = verify_report({dir + "/scale_truncated.py", "--gates", "contract,accuracy"});
  ASSERT_TRUE(bad.report.is_object()) << bad.log;
  EXPECT_EQ(bad.report["verdict"], "fail") << bad.report.dump(1);
  EXPECT_EQ(report_gate(bad.report, "contract")["status"], "pass") << bad.report.dump(1);
  EXPECT_EQ(report_gate(bad.report, "accuracy")["category"], "wrong-result") << bad.report.dump(1);
  // A value that is neither a tensor nor a number is said, with its position, before any gate.
  write_file(dir + "/scale_string.py",
             "import torch\nimport torch.nn as nn\n"
             "class Model(nn.Module):\n    def forward(self, A, how):\n        return A\n"
             "class ModelNew(Model):\n    pass\n"
             "def get_inputs():\n    return [torch.randn(4), 'fast']\n"
             "def get_init_inputs():\n    return []\n");
  auto r = run_gauntlet({"verify", dir + "/scale_string.py", "--quiet"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("get_inputs()[1] is a str"), std::string::npos) << r.err;
}

// Bad input: one line on stderr, exit 2.
TEST(ModuleOracle, UnusableModulesAreBadInput) {
  REQUIRE_PYTHON_TORCH();
  const std::string dir = temp_dir();
  write_file(dir + "/no_new.py", "import torch\nclass Model(torch.nn.Module):\n    pass\n");
  write_file(dir + "/no_inputs.py",
             "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x * 2\n"
             "class ModelNew(Model):\n    pass\n");
  for (const auto& [file, words] : {std::pair<std::string, std::string>{"no_new.py", "no class ModelNew"},
                                    {"no_inputs.py", "get_inputs"}}) {
    auto r = run_gauntlet({"verify", dir + "/" + file, "--quiet"});
    EXPECT_EQ(r.exit_code, 2) << file << r.out << r.err;
    EXPECT_NE(r.err.find(words), std::string::npos) << file << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

// A KernelBench sample defines ModelNew only (here tanh through expm1, accurate near 0, without
// Model's tanh and mul): the manifest's "reference" module supplies Model,
// get_inputs() and get_init_inputs(), to the candidate's children and to the reference child.
const char* kRefModule =
    "import torch\nimport torch.nn as nn\n"
    "class Model(nn.Module):\n    def __init__(self, scale):\n        super().__init__()\n        self.scale = scale\n"
    "    def forward(self, x):\n        return torch.tanh(x) * self.scale\n"
    "def get_inputs():\n    return [torch.randn(8, 512)]\n"
    "def get_init_inputs():\n    return [3.0]\n";
const char* kCandidateOnly =
    "import torch\nimport torch.nn as nn\n"
    "class ModelNew(nn.Module):\n    def __init__(self, scale):\n        super().__init__()\n        self.scale = scale\n"
    "    def forward(self, x):\n        a = x.abs()\n        t = torch.expm1(-(a + a))\n"
    "        return torch.copysign(-t / (t + 2), x) / (1.0 / self.scale)\n";

TEST(ModuleOracle, ReferenceModuleSuppliesModelAndInputs) {
  REQUIRE_PYTHON_TORCH();
  const std::string dir = temp_dir();
  write_file(dir + "/ref.py", kRefModule);
  write_file(dir + "/cand.py", kCandidateOnly);
  write_file(dir + "/m.json", R"({"op": "module", "source": "cand.py", "reference": "ref.py"})");
  const Verified r = verify_report({dir + "/m.json", "--gates", "contract,accuracy,special-values,provenance"});
  ASSERT_TRUE(r.report.is_object()) << r.log;
  EXPECT_EQ(r.exit_code, 0) << r.report.dump(1);
  const nlohmann::json& oracle = r.report["environment"]["module"]["oracle"];
  EXPECT_EQ(oracle["key_ops"], nlohmann::json::array({"aten::tanh", "aten::mul"})) << oracle.dump();
  // Without the reference the candidate's file has no Model: bad input, one line.
  write_file(dir + "/bare.json", R"({"op": "module", "source": "cand.py"})");
  auto bare = run_gauntlet({"verify", dir + "/bare.json", "--quiet"});
  EXPECT_EQ(bare.exit_code, 2) << bare.out << bare.err;
  EXPECT_NE(bare.err.find("no 'Model'"), std::string::npos) << bare.err;
}

// gauntlet audit of a JSONL {"ref", "candidate"} pair whose problem maps to no schema: the module
// oracle, with the pair's reference.
TEST(ModuleOracle, AuditOfAnUnmappedJsonlPairUsesItsReference) {
  REQUIRE_PYTHON_TORCH();
  const std::string dir = temp_dir();
  const nlohmann::json line = {{"ref", kRefModule}, {"candidate", kCandidateOnly}, {"name", "22_Tanh"}};
  write_file(dir + "/pairs.jsonl", line.dump() + "\n");
  auto r = run_gauntlet({"audit", dir + "/pairs.jsonl", "--db", dir + "/a.db", "--json", dir + "/a.json", "--work-dir",
                         dir + "/work", "--gates", "contract,accuracy", "--seed", "1"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const nlohmann::json j = nlohmann::json::parse(read_file(dir + "/a.json"), nullptr, false);
  ASSERT_TRUE(j.is_array() && j.size() == 1) << r.out << r.err << read_file(dir + "/a.json");
  EXPECT_EQ(j[0]["op"], "module") << j.dump(1);
  EXPECT_EQ(j[0]["verdict"], "pass") << j.dump(1);
}

// The reference child runs with --oracle-threads intra-op threads (at KernelBench's sizes one
// thread made it every gate's bottleneck). This Model answers with its own thread count, so the
// candidate's x + 3 is right exactly when the reference ran with 3 threads; verify and audit
// both pass the flag on.
constexpr const char* kThreadsModule =
    "import torch\nimport torch.nn as nn\n"
    "class Model(nn.Module):\n    def forward(self, x):\n        return x + torch.get_num_threads()\n"
    "class ModelNew(nn.Module):\n    def forward(self, x):\n        return x + 3\n"
    "def get_inputs():\n    return [torch.randn(8, 8)]\n"
    "def get_init_inputs():\n    return []\n";

TEST(ModuleOracle, ReferenceChildRunsWithTheOracleThreads) {
  REQUIRE_PYTHON_TORCH();
  const std::string dir = temp_dir();
  write_file(dir + "/threads.py", kThreadsModule);
  const Verified three = verify_report({dir + "/threads.py", "--gates", "accuracy", "--oracle-threads", "3"});
  ASSERT_TRUE(three.report.is_object()) << three.log;
  EXPECT_EQ(report_gate(three.report, "accuracy")["status"], "pass") << three.report.dump(1);
  const Verified two = verify_report({dir + "/threads.py", "--gates", "accuracy", "--oracle-threads", "2"});
  ASSERT_TRUE(two.report.is_object()) << two.log;
  EXPECT_EQ(report_gate(two.report, "accuracy")["status"], "fail") << two.report.dump(1);
  EXPECT_EQ(report_gate(two.report, "accuracy")["category"], "wrong-result") << two.report.dump(1);
  auto audit = run_gauntlet({"audit", dir + "/threads.py", "--db", dir + "/a.db", "--json", dir + "/a.json",
                             "--gates", "accuracy", "--oracle-threads", "3", "--jobs", "2"});
  EXPECT_EQ(audit.exit_code, 0) << audit.out << audit.err;
  auto bad = run_gauntlet({"verify", dir + "/threads.py", "--oracle-threads", "0", "--quiet"});
  EXPECT_EQ(bad.exit_code, 2) << bad.out << bad.err;
}

// The reference Model running out of memory on a case (here: a MemoryError, whose message is
// empty, raised only in float64) is gauntlet's bound, not the candidate's fault: a harness-error
// that names the error and says to raise --memory-limit, never an empty reason.
TEST(ModuleOracle, AReferenceOutOfMemoryIsAHarnessErrorWithTheRemedy) {
  REQUIRE_PYTHON_TORCH();
  const std::string dir = temp_dir();
  write_file(dir + "/oom.py", R"(import torch
import torch.nn as nn

calls = [0]

class Model(nn.Module):
    def forward(self, x):
        if x.dtype == torch.float64:
            calls[0] += 1
            if calls[0] > LOAD_CALLS:
                raise MemoryError()
        return x * 2

class ModelNew(nn.Module):
    def forward(self, x):
        return x * 2

def get_inputs():
    return [torch.randn(4, 8)]

def get_init_inputs():
    return []
)");
  const std::string module = read_file(dir + "/oom.py");
  // At load (the reference describes its outputs in float64 first): not verifiable, said so.
  write_file(dir + "/oom_at_load.py", "LOAD_CALLS = 0\n" + module);
  auto at_load = run_gauntlet({"verify", dir + "/oom_at_load.py", "--gates", "accuracy", "--quiet"});
  EXPECT_EQ(at_load.exit_code, 2) << at_load.out << at_load.err;
  EXPECT_NE(at_load.err.find("MemoryError (out of memory"), std::string::npos) << at_load.err;
  EXPECT_NE(at_load.err.find("raise --memory-limit"), std::string::npos) << at_load.err;
  // On a case, after a load that fit.
  write_file(dir + "/oom.py", "LOAD_CALLS = 1\n" + module);
  const Verified r = verify_report({dir + "/oom.py", "--gates", "accuracy"});
  ASSERT_TRUE(r.report.is_object()) << r.log;
  const nlohmann::json& g = report_gate(r.report, "accuracy");
  EXPECT_EQ(g["category"], "harness-error") << g.dump();
  const std::string message = g["message"];
  EXPECT_NE(message.find("MemoryError"), std::string::npos) << message;
  EXPECT_NE(message.find("raise --memory-limit"), std::string::npos) << message;
}

// At a problem's own large shapes (get_inputs() above the per-case budget) accuracy, special-values
// and subnormals run fewer cases, each over the whole input, and say so; a small module keeps the
// usual counts (here the floor is twice the cap: half the cases, accuracy one round of its seven
// distributions). A planted NaN-dropping ReLU at that shape is still caught by the fewer cases.
TEST(ModuleOracle, LargeFixedShapesRunFewerCasesAndStillCatchABug) {
  REQUIRE_PYTHON_TORCH();
  const std::vector<std::string> gates = {"--gates", "accuracy,special-values,subnormals"};
  std::vector<std::string> args = {kModules + "/softmax_kb_shape.py"};
  args.insert(args.end(), gates.begin(), gates.end());
  const Verified big = verify_report(args);
  ASSERT_TRUE(big.report.is_object()) << big.log;
  EXPECT_EQ(big.exit_code, 0) << big.report.dump(1);
  const std::map<std::string, int> fewer = {{"accuracy", 7}, {"special-values", 15}, {"subnormals", 6}};
  for (const auto& [g, cases] : fewer) {
    const nlohmann::json& v = report_gate(big.report, g);
    EXPECT_EQ(v["cases"], cases) << g << ": " << v.dump();
    EXPECT_NE(v["message"].get<std::string>().find("fewer cases at the contract's own shapes"), std::string::npos) << v.dump();
    EXPECT_EQ(v["evidence"]["case_cost_floor"], 2 * 16 * 16384) << v.dump();
  }
  args[0] = kModules + "/rmsnorm_module.py";
  const Verified small = verify_report(args);
  ASSERT_TRUE(small.report.is_object()) << small.log;
  EXPECT_EQ(report_gate(small.report, "accuracy")["cases"], 14) << small.report.dump(1);
  EXPECT_EQ(report_gate(small.report, "special-values")["cases"], 30) << small.report.dump(1);
  for (const char* g : {"accuracy", "special-values", "subnormals"})
    EXPECT_EQ(report_gate(small.report, g)["message"].get<std::string>().find("fewer cases"), std::string::npos) << g;

  const std::string dir = temp_dir();
  write_file(dir + "/relu_drops_nan.py",
             "import torch\nimport torch.nn as nn\n"
             "class Model(nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"
             "class ModelNew(nn.Module):\n    def forward(self, x):\n"
             "        return torch.where(x > 0, x, torch.zeros_like(x))\n"
             "def get_inputs():\n    return [torch.randn(16, 16384)]\n"
             "def get_init_inputs():\n    return []\n");
  const Verified bug = verify_report({dir + "/relu_drops_nan.py", "--gates", "special-values"});
  ASSERT_TRUE(bug.report.is_object()) << bug.log;
  EXPECT_EQ(bug.exit_code, 1) << bug.report.dump(1);
  EXPECT_EQ(report_gate(bug.report, "special-values")["status"], "fail") << bug.report.dump(1);
}

struct Bug {
  const char* manifest;
  std::vector<const char*> failing_gates;
};

class UnmappedModuleBug : public ::testing::TestWithParam<Bug> {};

TEST_P(UnmappedModuleBug, FailsAtItsGate) {
  REQUIRE_PYTHON_TORCH();
  std::string gates;
  for (const char* g : GetParam().failing_gates) gates += std::string(gates.empty() ? "" : ",") + g;
  const Verified r = verify_report({kModules + "/" + GetParam().manifest, "--gates", gates});
  ASSERT_TRUE(r.report.is_object()) << r.log;
  EXPECT_EQ(r.exit_code, 1) << r.log;
  EXPECT_EQ(r.report["verdict"], "fail");
  for (const char* g : GetParam().failing_gates)
    EXPECT_EQ(report_gate(r.report, g)["status"], "fail") << g << ": " << r.report.dump(1);
}

INSTANTIATE_TEST_SUITE_P(
    Modules, UnmappedModuleBug,
    ::testing::Values(Bug{"rmsnorm_half_sum.json", {"accuracy"}}, Bug{"hardtanh_returns_input.json", {"contract", "accuracy"}},
                      Bug{"rmsnorm_cached.json", {"statelessness"}}, Bug{"swish_inplace_input.json", {"memory"}}),
    [](const ::testing::TestParamInfo<Bug>& info) {
      std::string n = info.param.manifest;
      n = n.substr(0, n.size() - 5);
      for (char& c : n)
        if (!isalnum((unsigned char)c)) c = '_';
      return n;
    });

}  // namespace
