// Tests of KernelBench support: the level-1 mapping against the schemas, problem-name styles,
// module discovery (.py, folders, run folders, JSONL) and the manifests of mapped modules.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "gauntlet/kernelbench/kernelbench.h"
#include "gauntlet/schema/schema.h"

using namespace gauntlet;
using namespace gauntlet::kernelbench;
namespace fs = std::filesystem;

namespace {

std::string map_path() { return std::string(GAUNTLET_SOURCE_DIR) + "/kernelbench/level1.json"; }

ProblemMap level1() {
  std::string error;
  auto m = load_problem_map(map_path(), &error);
  EXPECT_TRUE(m) << error;
  return m ? *m : ProblemMap{};
}

struct TempDir {
  std::string path;
  TempDir() {
    char name[] = "/tmp/gauntlet-kb-XXXXXX";
    path = mkdtemp(name);
  }
  ~TempDir() {
    std::error_code ec;
    fs::permissions(path, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(path, ec);
  }
  std::string write(const std::string& rel, const std::string& text) const {
    std::string p = path + "/" + rel;
    fs::create_directories(fs::path(p).parent_path());
    std::ofstream(p) << text;
    return p;
  }
};

const char* kCudaModule =
    "import torch\nfrom torch.utils.cpp_extension import load_inline\n"
    "src = '__global__ void k(float* x) {}'\nmod = load_inline(name='k', cpp_sources='', cuda_sources=src)\n"
    "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return torch.softmax(x, dim=1)\n";
const char* kCpuModule =
    "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, A, B):\n        return A @ B\n";
const char* kReference =
    "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return torch.softmax(x, dim=1)\n";

std::string load_map_error(const std::string& text) {
  TempDir d;
  std::string p = d.write("map.json", text);
  std::string error;
  EXPECT_FALSE(load_problem_map(p, &error));
  return error;
}

}  // namespace

TEST(KernelBenchMap, EveryEntryNamesASchemaItsInputsAndAttributes) {
  std::vector<SchemaIssue> issues;
  auto schemas = load_schema_dir(std::string(GAUNTLET_SOURCE_DIR) + "/opschemas", &issues);
  ASSERT_FALSE(schemas.empty());
  ProblemMap map = level1();
  EXPECT_EQ(map.level, 1);
  EXPECT_GE(map.problems.size(), 15u);
  for (const auto& p : map.problems) {
    SCOPED_TRACE(p.name);
    const OpSchema* s = nullptr;
    for (const auto& c : schemas)
      if (c.name == p.op) s = &c;
    ASSERT_NE(s, nullptr) << "no schema " << p.op;
    // get_inputs gives every schema input once, in some order.
    EXPECT_EQ(p.inputs.size(), s->inputs.size());
    for (const auto& in : p.inputs) EXPECT_NE(s->input(in), nullptr) << "no input " << in;
    for (const auto& [name, value] : p.attrs) {
      const AttrSpec* a = s->attribute(name);
      ASSERT_NE(a, nullptr) << "no attribute " << name;
      EXPECT_EQ(value.index(), a->default_value.index()) << "attribute " << name << " has the wrong type";
    }
    for (const auto& [dim, lim] : p.shapes) EXPECT_TRUE(s->dims.count(dim)) << "no dim " << dim;
    if (!p.input_ranks.empty()) {
      // Each rank is one the schema generates for that input.
      for (size_t i = 0; i < p.inputs.size(); ++i) {
        bool found = false;
        for (const auto& alt : s->input(p.inputs[i])->shapes) found |= int(alt.size()) == p.input_ranks[i];
        EXPECT_TRUE(found) << p.inputs[i] << " rank " << p.input_ranks[i];
      }
    }
  }
  for (const auto& n : map.near_misses) {
    EXPECT_FALSE(n.reason.empty()) << n.name;
    if (!n.closest_op.empty()) {
      bool found = false;
      for (const auto& c : schemas) found |= c.name == n.closest_op;
      EXPECT_TRUE(found) << n.name << ": no schema " << n.closest_op;
    }
  }
}

TEST(KernelBenchMap, SemanticsChecksOnKnownProblems) {
  ProblemMap map = level1();
  const auto* sm = map.lookup("23_Softmax");
  ASSERT_NE(sm, nullptr);
  EXPECT_EQ(sm->op, "softmax");
  EXPECT_EQ(std::get<int64_t>(sm->attrs.at("dim")), 1);
  const auto* mm = map.lookup("1_Square_matrix_multiplication_");
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(mm->op, "matmul");
  EXPECT_EQ(map.lookup("3_Batched_matrix_multiplication")->op, "bmm");
  EXPECT_EQ(std::get<double>(map.lookup("32_HardTanh")->attrs.at("lo")), -1.0);
  // Semantics that differ are not mapped: multi-dim layer norm, keepdim sum, tanh GELU, A.T @ B.
  for (const char* n : {"40_LayerNorm", "47_Sum_reduction_over_a_dimension", "88_MinGPTNewGelu",
                        "16_Matmul_with_transposed_A", "36_RMSNorm_"})
    EXPECT_EQ(map.lookup(n), nullptr) << n;
}

TEST(KernelBenchMap, LookupAcceptsKernelBenchNamingStyles) {
  ProblemMap map = level1();
  for (const char* n : {"23_Softmax", "23_Softmax.py", "level1/23_Softmax", "KernelBench/level1/23_Softmax.py",
                        "level_1_problem_23_sample_0_kernel.py", "runs/my_run/level_1_problem_23_sample_7_kernel.py",
                        "level_1_problem_23", "/abs/level_1/23_softmax_.py"}) {
    const auto* m = map.lookup(n);
    ASSERT_NE(m, nullptr) << n;
    EXPECT_EQ(m->name, "23_Softmax") << n;
  }
  EXPECT_EQ(map.lookup("26_GELU")->name, "26_GELU_");            // trailing underscores do not matter
  EXPECT_EQ(map.lookup("level2/23_Softmax"), nullptr);           // another level
  EXPECT_EQ(map.lookup("level_2_problem_23_sample_0_kernel.py"), nullptr);
  EXPECT_EQ(map.lookup("23_Tanh"), nullptr);                     // the id's name differs
  EXPECT_EQ(map.lookup("22_Tanh"), nullptr);                     // not mapped
  EXPECT_EQ(map.lookup("softmax"), nullptr);
  EXPECT_EQ(map.lookup("kernel.py"), nullptr);

  auto r = parse_problem_name("runs/x/level_1_problem_42_sample_3_kernel.py");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->level, 1);
  EXPECT_EQ(r->id, 42);
  EXPECT_EQ(r->sample, 3);
  r = parse_problem_name("KernelBench/level1/19_ReLU.py");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->level, 1);
  EXPECT_EQ(r->id, 19);
  EXPECT_EQ(r->sample, -1);
  EXPECT_EQ(r->title, "ReLU");
  EXPECT_FALSE(parse_problem_name("level_1_problem_x"));
  EXPECT_FALSE(parse_problem_name("0_Foo"));
}

TEST(KernelBenchMap, MalformedMapsGiveErrorsNamingTheField) {
  EXPECT_NE(load_map_error("{").find("malformed JSON"), std::string::npos);
  EXPECT_NE(load_map_error(R"({"format": "x", "version": 1, "level": 1, "problems": []})").find("'format'"), std::string::npos);
  const std::string head = R"({"format": "gauntlet-kernelbench-map", "version": 1, "level": 1, )";
  EXPECT_NE(load_map_error(head + R"("problems": [{"id": 2, "name": "3_X", "op": "relu", "inputs": ["x"]}]})")
                .find("problems/0/name"), std::string::npos);
  EXPECT_NE(load_map_error(head + R"("problems": [{"id": 2, "name": "2_X", "op": "relu", "inputs": []}]})")
                .find("problems/0/inputs"), std::string::npos);
  EXPECT_NE(load_map_error(head + R"("problems": [{"id": 2, "name": "2_X", "op": "relu", "inputs": ["x"], "attrs": {"dim": "1"}}]})")
                .find("problems/0/attrs/dim"), std::string::npos);
  EXPECT_NE(load_map_error(head + R"("problems": [{"id": 2, "name": "2_X", "op": "relu", "inputs": ["x"], "color": 1}]})")
                .find("problems/0/color"), std::string::npos);
  EXPECT_NE(load_map_error(head + R"("problems": [{"id": 2, "name": "2_X", "op": "relu", "inputs": ["x"]},
                                                  {"id": 2, "name": "2_Y", "op": "relu", "inputs": ["x"]}]})")
                .find("listed twice"), std::string::npos);
  EXPECT_NE(load_map_error(head + R"("problems": [], "near_misses": [{"id": 5, "name": "5_X"}]})")
                .find("near_misses/0/reason"), std::string::npos);
  std::string error;
  EXPECT_FALSE(load_problem_map("/nonexistent/level1.json", &error));
  EXPECT_NE(error.find("/nonexistent/level1.json"), std::string::npos);
}

TEST(KernelBenchDiscover, FolderWithModulesNonModulesAndUnreadableFiles) {
  ProblemMap map = level1();
  TempDir d;
  d.write("a/23_Softmax.py", kCudaModule);
  d.write("a/helper.py", "def f():\n    return 1\n");
  d.write("b/my_matmul.py", kCpuModule);
  d.write("notes.txt", "not python");
  fs::create_symlink(d.path + "/missing-target.py", d.path + "/b/dangling.py");
  std::string locked = d.write("b/locked.py", kCpuModule);
  fs::permissions(locked, fs::perms::none);
  bool root = geteuid() == 0;  // root reads mode-000 files

  std::string error;
  auto entries = discover(d.path, map, {}, &error);
  ASSERT_TRUE(error.empty()) << error;
  ASSERT_EQ(entries.size(), 5u);  // .py files only, sorted by path
  EXPECT_EQ(entries[0].source, d.path + "/a/23_Softmax.py");
  EXPECT_TRUE(entries[0].error.empty()) << entries[0].error;
  ASSERT_TRUE(entries[0].mapping);
  EXPECT_EQ(entries[0].mapping->op, "softmax");
  EXPECT_EQ(entries[0].device, "cuda");

  EXPECT_NE(entries[1].error.find("no class ModelNew"), std::string::npos) << entries[1].error;  // a/helper.py
  EXPECT_NE(entries[2].error.find("cannot read"), std::string::npos) << entries[2].error;        // b/dangling.py
  EXPECT_EQ(entries[3].source, locked);
  if (!root) {
    EXPECT_NE(entries[3].error.find("cannot read"), std::string::npos) << entries[3].error;
  }
  EXPECT_TRUE(entries[4].error.empty());  // b/my_matmul.py: a module, but no problem known
  EXPECT_FALSE(entries[4].mapping);
  EXPECT_EQ(entries[4].device, "cpu");

  auto m = manifest_for(entries[0], &error);
  ASSERT_TRUE(m) << error;
  EXPECT_EQ(m->op, "softmax");
  EXPECT_EQ(m->entry, "ModelNew");
  EXPECT_EQ(m->source, entries[0].source);
  EXPECT_EQ(m->device, "cuda");
  EXPECT_EQ(m->dtypes, std::vector<DType>{DType::Float32});
  EXPECT_EQ(std::get<int64_t>(m->attrs.at("dim")), 1);
  // Its problem's contract: get_inputs()' rank, contiguous inputs.
  EXPECT_EQ(m->ranks.at("x"), std::vector<int64_t>{2});
  EXPECT_EQ(m->layouts, std::vector<std::string>{"contiguous"});
  EXPECT_FALSE(manifest_for(entries[4], &error));
  EXPECT_NE(error.find("no op schema"), std::string::npos);
  EXPECT_FALSE(manifest_for(entries[1], &error));

  auto one = discover(d.path + "/a/23_Softmax.py", map, {}, &error);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_TRUE(one[0].mapping);
  EXPECT_TRUE(discover(d.path + "/notes.txt", map, {}, &error).empty());
  EXPECT_NE(error.find("notes.txt"), std::string::npos);
  EXPECT_TRUE(discover(d.path + "/nothing-here", map, {}, &error).empty());
  EXPECT_NE(error.find("no such file"), std::string::npos);
}

TEST(KernelBenchDiscover, RunLayoutFindsProblemsAndReferences) {
  ProblemMap map = level1();
  TempDir d;
  d.write("KernelBench/level1/23_Softmax.py", kReference);
  d.write("KernelBench/level1/4_Matrix_vector_multiplication_.py", kReference);
  d.write("runs/r1/level_1_problem_23_sample_0_kernel.py", kCudaModule);
  d.write("runs/r1/level_1_problem_4_sample_1_kernel.py", kCpuModule);
  d.write("runs/r1/level_1_problem_22_sample_0_kernel.py", kCpuModule);  // 22_Tanh: not mapped
  d.write("runs/r1/eval_results.json", "{}");
  std::string error;
  DiscoverOptions opt;
  opt.reference_root = d.path + "/KernelBench";
  auto entries = discover(d.path + "/runs/r1", map, opt, &error);
  ASSERT_TRUE(error.empty()) << error;
  ASSERT_EQ(entries.size(), 3u);
  // Sorted by path: problem_22, problem_23, problem_4.
  EXPECT_FALSE(entries[0].mapping);
  ASSERT_TRUE(entries[0].problem);
  EXPECT_EQ(entries[0].problem->id, 22);
  ASSERT_TRUE(entries[1].mapping);
  EXPECT_EQ(entries[1].mapping->op, "softmax");
  EXPECT_EQ(entries[1].reference, d.path + "/KernelBench/level1/23_Softmax.py");
  EXPECT_EQ(entries[1].problem->sample, 0);
  ASSERT_TRUE(entries[2].mapping);
  EXPECT_EQ(entries[2].mapping->op, "matmul");
  auto m = manifest_for(entries[2], &error);
  ASSERT_TRUE(m) << error;
  EXPECT_EQ(m->device, "cpu");
  EXPECT_EQ(*m->shapes.at("N").max, 1);  // matrix-vector: b has one column
}

// The square and tall-skinny problems carry their shape relations: a solution reading N from
// A.size(0) is judged on square inputs, and rectangular ones lie outside its contract.
TEST(KernelBenchMap, SquareProblemsCarryTheirShapeRelations) {
  ProblemMap map = level1();
  std::map<int, std::vector<std::vector<std::string>>> relations;
  for (const ProblemMapping& p : map.problems) relations[p.id] = p.equal_dims;
  EXPECT_EQ(relations[1], (std::vector<std::vector<std::string>>{{"M", "K", "N"}}));
  EXPECT_EQ(relations[9], (std::vector<std::vector<std::string>>{{"M", "N"}}));
  EXPECT_TRUE(relations[2].empty());
  ModuleEntry e;
  e.source = "/tmp/1_Square_matrix_multiplication_.py";
  e.device = "cuda";
  for (const ProblemMapping& p : map.problems)
    if (p.id == 1) e.mapping = p;
  std::string error;
  auto m = manifest_for(e, &error);
  ASSERT_TRUE(m) << error;
  EXPECT_EQ(m->equal_dims, relations[1]);
  EXPECT_EQ(m->ranks.at("a"), std::vector<int64_t>{2});
  EXPECT_EQ(m->ranks.at("b"), std::vector<int64_t>{2});
}

TEST(KernelBenchDiscover, JsonlPairsAreWrittenAndBadLinesRecorded) {
  ProblemMap map = level1();
  TempDir d;
  nlohmann::json good = {{"ref", kReference}, {"candidate", kCudaModule}, {"name", "23_Softmax"}};
  nlohmann::json by_id = {{"ref", kReference}, {"candidate", kCpuModule}, {"level", 1}, {"problem_id", 2}};
  nlohmann::json no_candidate = {{"ref", kReference}};
  nlohmann::json not_module = {{"candidate", "print('hi')\n"}};
  std::string p = d.write("pairs.jsonl", good.dump() + "\n" + no_candidate.dump() + "\n\n{not json\n" +
                                              by_id.dump() + "\n" + not_module.dump() + "\n[1, 2]\n");
  std::string error;
  DiscoverOptions opt;
  opt.work_dir = d.path + "/work";
  auto entries = discover(p, map, opt, &error);
  ASSERT_TRUE(error.empty()) << error;
  ASSERT_EQ(entries.size(), 6u);  // the blank line is skipped

  EXPECT_TRUE(entries[0].error.empty()) << entries[0].error;
  EXPECT_EQ(entries[0].source, d.path + "/work/pairs_1_candidate.py");
  EXPECT_EQ(entries[0].reference, d.path + "/work/pairs_1_ref.py");
  ASSERT_TRUE(entries[0].mapping);
  EXPECT_EQ(entries[0].mapping->op, "softmax");
  EXPECT_EQ(entries[0].device, "cuda");
  std::ifstream in(entries[0].source);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, kCudaModule);

  EXPECT_EQ(entries[1].source, p + ":2");
  EXPECT_NE(entries[1].error.find("'candidate'"), std::string::npos) << entries[1].error;
  EXPECT_EQ(entries[2].source, p + ":4");
  EXPECT_NE(entries[2].error.find("malformed JSON"), std::string::npos) << entries[2].error;
  EXPECT_TRUE(entries[3].error.empty()) << entries[3].error;
  ASSERT_TRUE(entries[3].mapping);
  EXPECT_EQ(entries[3].mapping->name, "2_Standard_matrix_multiplication_");
  EXPECT_EQ(entries[3].device, "cpu");
  EXPECT_NE(entries[4].error.find("no class ModelNew"), std::string::npos) << entries[4].error;
  EXPECT_NE(entries[5].error.find("JSON object"), std::string::npos) << entries[5].error;

  EXPECT_TRUE(discover(p, map, {}, &error).empty());  // no work directory
  EXPECT_NE(error.find("work directory"), std::string::npos);
}

TEST(KernelBenchDiscover, ModuleTextChecks) {
  EXPECT_TRUE(defines_model_new("class ModelNew(nn.Module):\n"));
  EXPECT_TRUE(defines_model_new("import torch\n\nclass ModelNew(torch.nn.Module):\n"));
  EXPECT_FALSE(defines_model_new("class Model(nn.Module):\n"));
  EXPECT_FALSE(defines_model_new("class ModelNewer(nn.Module):\n"));
  EXPECT_FALSE(defines_model_new("# see class ModelNew below\n"));
  EXPECT_EQ(module_device("import triton\n"), "cuda");
  EXPECT_EQ(module_device("x = x.cuda()\n"), "cuda");
  EXPECT_EQ(module_device("load_inline(name='k', cpp_sources=s, functions=['f'])\n"), "cpu");
  EXPECT_EQ(module_device("y = torch.relu(x)\n"), "cpu");
  EXPECT_EQ(module_device("mytriton_helper = 1\n"), "cpu");
}
