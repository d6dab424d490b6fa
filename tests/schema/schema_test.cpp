// Op schemas: the 21 shipped files load and lint clean; malformed copies give issues naming the
// file and the JSON-pointer field; the fields reserved for future ops parse and lint.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <set>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "gauntlet/schema/schema.h"
#include "../test_files.h"

using namespace gauntlet;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kRequired = {
    "relu",      "gelu",     "sigmoid", "add",      "clamp",       "sum",    "mean",
    "amax",      "logsumexp", "softmax", "log_softmax", "layer_norm", "rms_norm", "matmul",
    "linear_relu", "bmm",    "conv2d",  "sdpa",     "cumsum",      "embedding", "cross_entropy",
    // The next ops (SPEC), as their schemas arrive.
    "segment_sum", "filter", "sort", "topk", "group_by_sum", "scatter_add", "quantize_per_tensor", "int8_matmul",
    "unique", "hash_join", "dequantize", "fp8_matmul"};

std::string source_schemas() { return std::string(GAUNTLET_SOURCE_DIR) + "/opschemas"; }

std::string render(const std::vector<SchemaIssue>& issues) {
  std::string r;
  for (const auto& i : issues) r += "  " + i.file + " " + i.field + ": " + i.message + "\n";
  return r;
}

json read_json(const std::string& path) {
  std::ifstream f(path);
  return json::parse(f);
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "gauntlet-schema-test-XXXXXX").string();
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    const char* d = mkdtemp(buf.data());
    path_ = d ? d : "";
  }
  ~TempDir() {
    if (!path_.empty()) gauntlet::testing::remove_tree(path_);
  }
  std::string write(const std::string& name, const std::string& text) const {
    std::string p = path_ + "/" + name;
    std::ofstream(p) << text;
    return p;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

bool has_issue(const std::vector<SchemaIssue>& issues, const std::string& file, const std::string& field,
               const std::string& message_part) {
  for (const auto& i : issues)
    if (i.file == file && i.field == field && i.message.find(message_part) != std::string::npos) return true;
  return false;
}

// Writes `op`'s shipped schema, changed by `edit`, to a temp dir; returns load+lint issues.
struct Mutated {
  std::string file;
  std::vector<SchemaIssue> issues;
};
Mutated mutate(const TempDir& dir, const std::string& op, const std::function<void(json&)>& edit) {
  json j = read_json(source_schemas() + "/" + op + ".json");
  edit(j);
  std::string file = dir.write(op + ".json", j.dump(2));
  return {file, lint_schema_file(file, kRequired)};
}

}  // namespace

TEST(Schema, EveryShippedSchemaLoadsAndLintsClean) {
  std::vector<SchemaIssue> issues;
  std::vector<OpSchema> all = load_schema_dir(source_schemas(), &issues);
  EXPECT_TRUE(issues.empty()) << render(issues);
  std::vector<std::string> names;
  for (const auto& s : all) {
    names.push_back(s.name);
    auto lint = lint_schema(s, kRequired);
    EXPECT_TRUE(lint.empty()) << s.name << ":\n" << render(lint);
  }
  std::vector<std::string> want = kRequired;
  std::sort(want.begin(), want.end());
  EXPECT_EQ(names, want);  // load_schema_dir sorts by file name
  // Every file in the directory, one by one, through the same path `gauntlet schemas lint` takes.
  for (const auto& e : fs::directory_iterator(source_schemas())) {
    if (e.path().extension() != ".json") continue;
    auto li = lint_schema_file(e.path().string(), kRequired);
    EXPECT_TRUE(li.empty()) << render(li);
  }
}

// The SPEC's argument order, names and types, and the tolerance policy of the brief.
TEST(Schema, RequiredOpsMatchTheSpecTable) {
  struct Want {
    std::vector<std::string> inputs;
    std::vector<std::pair<std::string, std::string>> attrs;
    std::string mode;
  };
  const std::map<std::string, Want> table = {
      {"relu", {{"x"}, {}, "exact"}},
      {"gelu", {{"x"}, {}, "reduction"}},  // elementwise bound on |x| (1+erf cancellation)
      {"sigmoid", {{"x"}, {}, "ulp"}},
      {"add", {{"a", "b"}, {}, "exact"}},
      {"clamp", {{"x"}, {{"lo", "double"}, {"hi", "double"}}, "exact"}},
      {"sum", {{"x"}, {{"dim", "int64"}}, "reduction"}},
      {"mean", {{"x"}, {{"dim", "int64"}}, "reduction"}},
      {"amax", {{"x"}, {{"dim", "int64"}}, "exact"}},
      {"logsumexp", {{"x"}, {{"dim", "int64"}}, "reduction"}},
      {"softmax", {{"x"}, {{"dim", "int64"}}, "reduction"}},
      {"log_softmax", {{"x"}, {{"dim", "int64"}}, "reduction"}},
      {"layer_norm", {{"x", "weight", "bias"}, {{"eps", "double"}}, "reduction"}},
      {"rms_norm", {{"x", "weight"}, {{"eps", "double"}}, "reduction"}},
      {"matmul", {{"a", "b"}, {}, "reduction"}},
      {"linear_relu", {{"x", "w", "b"}, {}, "reduction"}},
      {"bmm", {{"a", "b"}, {}, "reduction"}},
      {"conv2d", {{"x", "w", "b"}, {{"stride", "int64"}, {"padding", "int64"}}, "reduction"}},
      {"sdpa", {{"q", "k", "v"}, {{"causal", "bool"}}, "reduction"}},
      {"cumsum", {{"x"}, {{"dim", "int64"}}, "reduction"}},
      {"embedding", {{"weight", "idx"}, {}, "exact"}},
      {"cross_entropy", {{"logits", "target"}, {}, "reduction"}},
      {"segment_sum", {{"x", "offsets"}, {}, "reduction"}},
      {"filter", {{"x"}, {{"threshold", "double"}}, "exact"}},
      {"sort", {{"keys", "values"}, {}, "exact"}},
      {"topk", {{"x"}, {{"k", "int64"}}, "exact"}},
      {"group_by_sum", {{"keys", "values"}, {{"num_groups", "int64"}}, "reduction"}},
      {"scatter_add", {{"x", "index"}, {{"size", "int64"}}, "reduction"}},
  };
  const std::vector<DType> floats = {DType::Float32, DType::Float16, DType::BFloat16};
  for (const auto& [op, want] : table) {
    std::vector<SchemaIssue> issues;
    auto s = load_schema_file(source_schemas() + "/" + op + ".json", &issues);
    ASSERT_TRUE(s) << op << "\n" << render(issues);
    std::vector<std::string> ins;
    for (const auto& i : s->inputs) ins.push_back(i.name);
    EXPECT_EQ(ins, want.inputs) << op;
    std::vector<std::pair<std::string, std::string>> attrs;
    for (const auto& a : s->attributes) attrs.push_back({a.name, a.type});
    EXPECT_EQ(attrs, want.attrs) << op;
    EXPECT_EQ(s->case_dtypes(), floats) << op;
    EXPECT_EQ(s->oracle, op);
    // topk's tied indices may come in any order (SPEC): runs agree up to that order; scatter_add's
    // order of additions is free within the declared bound.
    EXPECT_EQ(s->determinism, op == "topk" ? "equivalence" : op == "scatter_add" ? "tolerance" : "bitwise") << op;
    // filter drops NaN, sort moves it last, topk puts it first: none propagates it elementwise.
    EXPECT_EQ(s->nan_inf, op == "filter" || op == "sort" || op == "topk" ? "custom" : "propagate") << op;
    EXPECT_FALSE(s->forbidden_ops.empty()) << op;
    ASSERT_EQ(s->outputs.size(), op == "sort" || op == "topk" ? 2u : 1u) << op;
    // The output's dtype is the first input's, or for group_by_sum (int64 keys first) the values'.
    EXPECT_EQ(s->outputs[0].dtype, "same:" + (op == "group_by_sum" ? want.inputs[1] : want.inputs[0])) << op;
    for (DType d : floats) {
      ASSERT_TRUE(s->tolerance.count(d)) << op << " " << dtype_name(d);
      const Tolerance& t = s->tolerance.at(d);
      EXPECT_EQ(t.mode, want.mode) << op << " " << dtype_name(d);
      EXPECT_FALSE(t.reason.empty());
      if (t.mode == "ulp") {
        EXPECT_EQ(t.ulps, d == DType::Float32 ? 4 : 2) << op;
      }
      if (t.mode == "reduction" && op == "gelu") {
        EXPECT_EQ(t.ulps, d == DType::Float32 ? 4 : 2) << op;
        EXPECT_EQ(t.c, 2);
        EXPECT_EQ(t.accumulator, "float32");
      } else if (t.mode == "reduction") {
        EXPECT_EQ(t.ulps, 2);
        EXPECT_EQ(t.c, 8);
        EXPECT_EQ(t.ceiling_c, 1);
        EXPECT_EQ(t.accumulator, "float32");
      }
    }
    bool has_dim = false;
    for (const auto& a : s->attributes) has_dim = has_dim || !a.dim_of.empty();
    if (has_dim) {
      ASSERT_TRUE(s->reduction) << op;
      EXPECT_EQ(s->reduction->K, "size(x,dim)") << op;
      EXPECT_EQ(s->attribute("dim")->dim_of, "x");
      EXPECT_EQ(std::get<int64_t>(s->attribute("dim")->default_value), -1);
    }
  }
}

TEST(Schema, SpotChecksOfTheContracts) {
  std::vector<SchemaIssue> issues;
  auto all = load_schema_dir(source_schemas(), &issues);
  std::map<std::string, OpSchema> by;
  for (auto& s : all) by[s.name] = s;
  ASSERT_EQ(by.size(), 33u) << render(issues);
  // fp8_matmul: e4m3 operands make the case dtype, judged in the float32 output by a float32-accumulator bound.
  ASSERT_EQ(by["fp8_matmul"].case_dtypes(), std::vector<DType>{DType::Float8E4M3});
  EXPECT_EQ(by["fp8_matmul"].tolerance.at(DType::Float8E4M3).mode, "reduction");
  EXPECT_EQ(by["fp8_matmul"].tolerance.at(DType::Float8E4M3).accumulator, "float32");
  EXPECT_EQ(by["fp8_matmul"].outputs[0].dtype, "float32");

  // add: b broadcasts to a.
  EXPECT_EQ(by["add"].input("b")->broadcast_to, "a");
  EXPECT_EQ(by["add"].outputs[0].shape_rule, "broadcast:a,b");
  // clamp: defaults and the double constraint.
  EXPECT_EQ(std::get<double>(by["clamp"].attribute("lo")->default_value), -0.5);
  EXPECT_EQ(std::get<double>(by["clamp"].attribute("hi")->default_value), 0.5);
  EXPECT_EQ(by["clamp"].attr_constraints, std::vector<std::string>{"lo <= hi"});
  // norms
  EXPECT_EQ(std::get<double>(by["layer_norm"].attribute("eps")->default_value), 1e-5);
  EXPECT_EQ(std::get<double>(by["rms_norm"].attribute("eps")->default_value), 1e-6);
  EXPECT_EQ(by["layer_norm"].reduction->K, "D");
  // GEMMs and conv
  EXPECT_EQ(by["matmul"].reduction->K, "K");
  EXPECT_EQ(by["conv2d"].reduction->K, "C*KH*KW");
  EXPECT_EQ(by["sdpa"].reduction->K, "S");
  auto layouts = by["conv2d"].input("x")->layouts;
  EXPECT_NE(std::find(layouts.begin(), layouts.end(), "channels_last"), layouts.end());
  const AttrSpec* stride = by["conv2d"].attribute("stride");
  EXPECT_EQ(std::get<int64_t>(stride->default_value), 1);
  EXPECT_EQ(*stride->min, 1);
  EXPECT_EQ(*stride->max, 4);
  // embedding: int64 indices below V, exact, errors for out-of-range indices.
  const InputSpec* idx = by["embedding"].input("idx");
  EXPECT_EQ(idx->dtypes, std::vector<DType>{DType::Int64});
  EXPECT_EQ(idx->values.kind, "index");
  EXPECT_EQ(idx->values.below, "V");
  EXPECT_EQ(by["embedding"].error_inputs.size(), 2u);
  EXPECT_EQ(by["cross_entropy"].outputs[0].shape_rule, "scalar");
  // segment_sum: monotone int64 offsets from 0 to N over zipf-sized segments, [S,D] out, K = N
  // (the longest segment), and offsets ending anywhere else rejected.
  const InputSpec* offsets = by["segment_sum"].input("offsets");
  EXPECT_EQ(offsets->dtypes, std::vector<DType>{DType::Int64});
  EXPECT_EQ(offsets->values.kind, "offsets");
  EXPECT_EQ(offsets->values.total, "N");
  EXPECT_EQ(offsets->values.distribution, "zipf");
  EXPECT_EQ(by["segment_sum"].outputs[0].dims, (std::vector<std::string>{"S", "D"}));
  EXPECT_EQ(by["segment_sum"].reduction->K, "N");
  EXPECT_TRUE(by["segment_sum"].dims.at("N").zero_allowed);
  EXPECT_EQ(by["segment_sum"].error_inputs.size(), 3u);
  // filter: a data-dependent [?] output of at most N elements, its threshold drawn from x's values.
  EXPECT_TRUE(by["filter"].outputs[0].data_dependent());
  EXPECT_EQ(by["filter"].outputs[0].dims, (std::vector<std::string>{"?"}));
  EXPECT_EQ(by["filter"].outputs[0].max_size, "N");
  EXPECT_EQ(by["filter"].attributes[0].drawn_from, "x");
  // sort: tied float keys in every spread, a permutation of [0, N) as the int64 payload, two outputs.
  EXPECT_EQ(by["sort"].input("keys")->values.ties.size(), 5u);
  EXPECT_EQ(by["sort"].input("values")->values.distribution, "all_distinct");
  EXPECT_EQ(by["sort"].outputs[1].dtype, "int64");
  // group_by_sum / scatter_add: int64 keys below the dim their size attribute is tied to, drawn
  // zipf and every other skew in turn; a [G] output; K = N (all keys in one group); scatter_add's
  // runs may differ within the tolerance, with the reason given.
  for (const auto& [op, keys, attr, dim] : {std::tuple<std::string, std::string, std::string, std::string>{
                                                "group_by_sum", "keys", "num_groups", "G"},
                                            {"scatter_add", "index", "size", "V"}}) {
    const OpSchema& s = by[op];
    const InputSpec* k = s.input(keys);
    ASSERT_TRUE(k) << op;
    EXPECT_EQ(k->values.kind, "key") << op;
    EXPECT_EQ(k->values.below, dim) << op;
    EXPECT_EQ(k->values.distribution, "zipf") << op;
    EXPECT_EQ(k->values.also, (std::vector<std::string>{"all_equal", "all_distinct", "sorted_runs", "uniform"})) << op;
    ASSERT_TRUE(s.attribute(attr)) << op;
    EXPECT_EQ(s.attribute(attr)->size_of, dim) << op;
    EXPECT_EQ(s.outputs[0].dims, std::vector<std::string>{attr}) << op;
    EXPECT_EQ(s.reduction->K, "N") << op;
    EXPECT_EQ(s.error_inputs.size(), 3u) << op;
  }
  EXPECT_EQ(by["group_by_sum"].case_dtype_input()->name, "values");
  EXPECT_FALSE(by["scatter_add"].determinism_notes.empty());
  // Every op with no error input says why.
  for (const auto& [n, s] : by)
    if (s.error_inputs.empty()) {
      EXPECT_FALSE(s.error_inputs_note.empty()) << n;
    }
  // The forbidden ops name the op's own reference.
  auto forbids = [&](const std::string& op, const std::string& aten) {
    const auto& f = by[op].forbidden_ops;
    return std::find(f.begin(), f.end(), aten) != f.end();
  };
  EXPECT_TRUE(forbids("softmax", "aten::_softmax"));
  EXPECT_TRUE(forbids("matmul", "aten::mm"));
  EXPECT_TRUE(forbids("matmul", "aten::addmm"));
  EXPECT_TRUE(forbids("conv2d", "aten::convolution"));
  EXPECT_TRUE(forbids("sdpa", "aten::scaled_dot_product_attention"));

  // The expressions evaluate on a concrete case: conv2d's output extent and cost, softmax's K.
  const OpSchema& conv = by["conv2d"];
  std::map<std::string, int64_t> v = {{"N", 2}, {"C", 3}, {"H", 9}, {"W", 8}, {"O", 4}, {"KH", 3}, {"KW", 3},
                                      {"stride", 2}, {"padding", 1}, {"elem_size", 4}};
  std::string err;
  EXPECT_EQ(eval_expr(conv.outputs[0].dims[2], v, &err).value_or(-1), 5);  // (9+2-3)/2+1
  EXPECT_EQ(eval_expr(conv.outputs[0].dims[3], v, &err).value_or(-1), 4);  // (8+2-3)/2+1
  EXPECT_EQ(eval_expr(conv.flops, v, &err).value_or(-1), 2 * 2 * 4 * 5 * 4 * 3 * 3 * 3);
  for (const auto& c : conv.constraints) EXPECT_EQ(eval_expr(c, v, &err).value_or(0), 1) << c;
  EXPECT_EQ(eval_expr(by["softmax"].reduction->K, {{"dim", 0}}, {{"x", {7, 1000}}}, &err).value_or(-1), 7);
  EXPECT_EQ(eval_expr(by["softmax"].reduction->K, {{"dim", -1}}, {{"x", {7, 1000}}}, &err).value_or(-1), 1000);
  EXPECT_EQ(eval_expr(by["sdpa"].flops, {{"B", 1}, {"H", 1}, {"S", 4}, {"D", 2}, {"causal", 1}}, &err).value_or(-1),
            4 * 2 * 10);  // 10 unmasked pairs of 16
}

TEST(Schema, BadJsonNamesTheFileAndLine) {
  TempDir dir;
  std::string text;
  {
    std::ifstream f(source_schemas() + "/relu.json");
    std::stringstream b;
    b << f.rdbuf();
    text = b.str();
  }
  std::string file = dir.write("relu.json", text.substr(0, text.size() / 2));
  std::vector<SchemaIssue> issues;
  EXPECT_FALSE(load_schema_file(file, &issues));
  ASSERT_EQ(issues.size(), 1u);
  EXPECT_EQ(issues[0].file, file);
  EXPECT_NE(issues[0].message.find("invalid JSON at line"), std::string::npos) << issues[0].message;
  // A trailing comma is reported at its line too.
  std::string bad = dir.write("gelu.json", "{\n  \"name\": \"gelu\",\n}\n");
  issues.clear();
  EXPECT_FALSE(load_schema_file(bad, &issues));
  ASSERT_FALSE(issues.empty());
  EXPECT_NE(issues[0].message.find("line 3"), std::string::npos) << issues[0].message;
  // A missing file is an issue, not an exception.
  issues.clear();
  EXPECT_FALSE(load_schema_file(dir.path() + "/absent.json", &issues));
  EXPECT_EQ(issues.size(), 1u);
  // load_schema_dir keeps going past a bad file.
  dir.write("sum.json", read_json(source_schemas() + "/sum.json").dump());
  issues.clear();
  auto loaded = load_schema_dir(dir.path(), &issues);
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_EQ(loaded[0].name, "sum");
  EXPECT_EQ(issues.size(), 2u) << render(issues);
}

TEST(Schema, MalformedCopiesNameFileAndField) {
  TempDir dir;
  {
    auto m = mutate(dir, "softmax", [](json& j) { j["tolerance"]["float16"].erase("reason"); });
    EXPECT_TRUE(has_issue(m.issues, m.file, "/tolerance/float16/reason", "missing required field")) << render(m.issues);
  }
  {
    auto m = mutate(dir, "softmax", [](json& j) { j["tolerance"]["float16"]["reason"] = ""; });
    EXPECT_TRUE(has_issue(m.issues, m.file, "/tolerance/float16/reason", "missing reason")) << render(m.issues);
  }
  {
    auto m = mutate(dir, "sum", [](json& j) {
      j["tolerence"] = j["tolerance"];
      j.erase("tolerance");
    });
    EXPECT_TRUE(has_issue(m.issues, m.file, "/tolerence", "did you mean \"tolerance\"")) << render(m.issues);
    EXPECT_TRUE(has_issue(m.issues, m.file, "/tolerance", "missing required field")) << render(m.issues);
  }
  {
    auto m = mutate(dir, "sum", [](json& j) { j["dims"]["N"]["typicl"] = json::array({4}); });
    EXPECT_TRUE(has_issue(m.issues, m.file, "/dims/N/typicl", "did you mean \"typical\"")) << render(m.issues);
  }
  {
    auto m = mutate(dir, "matmul", [](json& j) { j["cost"]["flops"] = "2*M*N*"; });
    EXPECT_TRUE(has_issue(m.issues, m.file, "/cost/flops", "does not parse")) << render(m.issues);
  }
  {
    auto m = mutate(dir, "matmul", [](json& j) { j["cost"]["flops"] = "2*M*N*Q"; });
    EXPECT_TRUE(has_issue(m.issues, m.file, "/cost/flops", "unknown name 'Q'")) << render(m.issues);
  }
  {
    // A name that exists only in some shape alternatives: relu's x may be [N].
    auto m = mutate(dir, "relu", [](json& j) { j["cost"]["flops"] = "B*M*N"; });
    EXPECT_TRUE(has_issue(m.issues, m.file, "/cost/flops", "x [N]: unknown name 'B'")) << render(m.issues);
  }
  {
    auto m = mutate(dir, "layer_norm", [](json& j) { j["cost"]["flops"] = "8*numel(x)*eps"; });
    EXPECT_TRUE(has_issue(m.issues, m.file, "/cost/flops", "attribute 'eps' is double")) << render(m.issues);
  }
  {
    auto m = mutate(dir, "softmax", [](json& j) { j["reduction"]["K"] = "size(y,dim)"; });
    EXPECT_TRUE(has_issue(m.issues, m.file, "/reduction/K", "unknown input 'y'")) << render(m.issues);
  }
  {
    auto m = mutate(dir, "relu", [](json& j) { j["inputs"][0]["dtypes"][1] = "float8"; });
    EXPECT_TRUE(has_issue(m.issues, m.file, "/inputs/0/dtypes/1", "unknown dtype \"float8\"")) << render(m.issues);
  }
  {
    auto m = mutate(dir, "layer_norm", [](json& j) { j["attributes"][0]["default"] = 1.0; });
    EXPECT_TRUE(has_issue(m.issues, m.file, "/attributes/0/default", "above max")) << render(m.issues);
  }
  {
    auto m = mutate(dir, "conv2d", [](json& j) { j["attributes"][0]["default"] = 2.5; });
    EXPECT_TRUE(has_issue(m.issues, m.file, "/attributes/0/default", "expected an integer")) << render(m.issues);
  }
  {
    auto m = mutate(dir, "softmax", [](json& j) { j["attributes"][0]["default"] = 5; });
    EXPECT_TRUE(has_issue(m.issues, m.file, "/attributes/0/default", "is not a dim of x")) << render(m.issues);
  }
  {
    auto m = mutate(dir, "clamp", [](json& j) { j["attributes"][0]["default"] = 0.75; });
    EXPECT_TRUE(has_issue(m.issues, m.file, "/attr_constraints/0", "violate")) << render(m.issues);
  }
  {
    auto m = mutate(dir, "clamp", [](json& j) { j["attr_constraints"][0] = "lo <= hj"; });
    EXPECT_TRUE(has_issue(m.issues, m.file, "/attr_constraints/0", "unknown name 'hj'")) << render(m.issues);
  }
  {
    auto m = mutate(dir, "sum", [](json& j) { j["dims"]["N"]["typical"].push_back(70000); });
    EXPECT_TRUE(has_issue(m.issues, m.file, "/dims/N/typical/4", "outside [1, 65536]")) << render(m.issues);
  }
  {
    auto m = mutate(dir, "softmax", [](json& j) { j["dims"]["N"]["typical"].push_back(0); });
    EXPECT_TRUE(has_issue(m.issues, m.file, "/dims/N/typical/4", "zero_allowed is false")) << render(m.issues);
  }
  {
    auto m = mutate(dir, "sum", [](json& j) { j["oracle"] = "summ"; });
    EXPECT_TRUE(has_issue(m.issues, m.file, "/oracle", "unknown oracle id \"summ\"")) << render(m.issues);
  }
  {
    auto m = mutate(dir, "matmul", [](json& j) { j["inputs"][1]["same_dtype_as"] = "c"; });
    EXPECT_TRUE(has_issue(m.issues, m.file, "/inputs/1/same_dtype_as", "unknown input \"c\"")) << render(m.issues);
  }
  {
    auto m = mutate(dir, "add", [](json& j) { j["inputs"][1]["broadcast_to"] = "x"; });
    EXPECT_TRUE(has_issue(m.issues, m.file, "/inputs/1/broadcast_to", "unknown input \"x\"")) << render(m.issues);
  }
  {
    auto m = mutate(dir, "sum", [](json& j) { j["outputs"][0]["shape"] = "reduce:x:axis"; });
    EXPECT_TRUE(has_issue(m.issues, m.file, "/outputs/0/shape", "unknown attribute \"axis\"")) << render(m.issues);
  }
  {
    auto m = mutate(dir, "sum", [](json& j) { j["outputs"][0]["shape"] = "reduce:z:dim"; });
    EXPECT_TRUE(has_issue(m.issues, m.file, "/outputs/0/shape", "unknown input \"z\"")) << render(m.issues);
  }
  {
    auto m = mutate(dir, "softmax", [](json& j) { j["reduction"] = nullptr; });
    EXPECT_TRUE(has_issue(m.issues, m.file, "/reduction", "an attribute is a dim")) << render(m.issues);
  }
  {
    auto m = mutate(dir, "softmax", [](json& j) { j.erase("reduction"); });
    EXPECT_TRUE(has_issue(m.issues, m.file, "/reduction", "missing required field")) << render(m.issues);
  }
  {
    auto m = mutate(dir, "gelu", [](json& j) { j["tolerance"].erase("bfloat16"); });
    EXPECT_TRUE(has_issue(m.issues, m.file, "/tolerance/bfloat16", "missing tolerance for bfloat16")) << render(m.issues);
  }
  {
    auto m = mutate(dir, "gelu", [](json& j) { j.erase("error_inputs_note"); });
    EXPECT_TRUE(has_issue(m.issues, m.file, "/error_inputs", "error_inputs_note")) << render(m.issues);
  }
  {
    auto m = mutate(dir, "matmul", [](json& j) { j["error_inputs"][0]["shapes"]["c"] = json::array({"K"}); });
    EXPECT_TRUE(has_issue(m.issues, m.file, "/error_inputs/0/shapes/c", "unknown input \"c\"")) << render(m.issues);
  }
  {
    auto m = mutate(dir, "matmul", [](json& j) { j["cost"].erase("bytes"); });
    EXPECT_TRUE(has_issue(m.issues, m.file, "/cost/bytes", "missing required field")) << render(m.issues);
  }
  {
    auto m = mutate(dir, "matmul", [](json& j) { j.erase("forbidden_ops"); });
    EXPECT_TRUE(has_issue(m.issues, m.file, "/forbidden_ops", "missing required field")) << render(m.issues);
  }
  {
    auto m = mutate(dir, "matmul", [](json& j) { j["tolerance"]["float64"] = j["tolerance"]["float32"]; });
    EXPECT_TRUE(has_issue(m.issues, m.file, "/tolerance/float64", "does not allow")) << render(m.issues);
  }
  {
    auto m = mutate(dir, "matmul", [](json& j) { j["tolerance"]["fp8"] = j["tolerance"]["float32"]; });
    EXPECT_TRUE(has_issue(m.issues, m.file, "/tolerance/fp8", "unknown dtype")) << render(m.issues);
  }
  {
    auto m = mutate(dir, "matmul", [](json& j) { j["name"] = "mm"; });
    EXPECT_TRUE(has_issue(m.issues, m.file, "/name", "differs from the file name")) << render(m.issues);
  }
  {
    auto m = mutate(dir, "conv2d", [](json& j) { j["inputs"][2]["layouts"].push_back("channels_last"); });
    EXPECT_TRUE(has_issue(m.issues, m.file, "/inputs/2/layouts/4", "rank-4")) << render(m.issues);
  }
  {
    auto m = mutate(dir, "sum", [](json& j) { j["dims"]["Q"] = j["dims"]["N"]; });
    EXPECT_TRUE(has_issue(m.issues, m.file, "/dims/Q", "used by no input shape")) << render(m.issues);
  }
  {
    auto m = mutate(dir, "embedding", [](json& j) { j["inputs"][1]["values"].erase("below"); });
    EXPECT_TRUE(has_issue(m.issues, m.file, "/inputs/1/values/below", "needs \"below\"")) << render(m.issues);
  }
  {
    auto m = mutate(dir, "sum", [](json& j) { j["tolerance"]["float32"]["mode"] = "allclose"; });
    EXPECT_TRUE(has_issue(m.issues, m.file, "/tolerance/float32/mode", "unknown tolerance mode")) << render(m.issues);
  }
  {
    auto m = mutate(dir, "sum", [](json& j) { j["dims"]["N"]["min"] = "1"; });
    EXPECT_TRUE(has_issue(m.issues, m.file, "/dims/N/min", "expected an integer, got a string")) << render(m.issues);
  }
}

TEST(Schema, JsonPointerEscapesKeys) {
  TempDir dir;
  auto m = mutate(dir, "relu", [](json& j) { j["tolerance"]["a/b~c"] = j["tolerance"]["float32"]; });
  EXPECT_TRUE(has_issue(m.issues, m.file, "/tolerance/a~1b~0c", "unknown dtype")) << render(m.issues);
}

// ---- Future ops: the format's room for them (docs/schema-format.md, "Beyond the required ops"). ----

namespace {

const char* kFutureOps[] = {
    // Tie order in topk/sort: values exact, indices up to a permutation among equal values.
    R"J({"schema_version": 1, "name": "sort", "semantics": "torch.sort(x, dim=-1, stable=stable)",
        "dims": {"M": {"min": 1, "max": 4096, "typical": [1, 5]}, "N": {"min": 1, "max": 65536, "typical": [1, 7, 300]}},
        "inputs": [{"name": "x", "shapes": [["M", "N"]], "dtypes": ["float32", "float16", "bfloat16", "int64"],
                    "layouts": ["contiguous", "strided"]}],
        "attributes": [{"name": "stable", "type": "bool", "default": false, "values": [false, true]}],
        "outputs": [{"name": "values", "shape": "same:x", "dtype": "same:x"},
                    {"name": "indices", "shape": "same:x", "dtype": "int64", "equivalence": "permutation_of_ties",
                     "tie_key": "values", "strict_when": "stable"}],
        "oracle": "sort",
        "tolerance": {"float32": {"mode": "exact", "reason": "a permutation of the input"},
                      "float16": {"mode": "exact", "reason": "a permutation of the input"},
                      "bfloat16": {"mode": "exact", "reason": "a permutation of the input"}},
        "nan_inf": {"policy": "custom", "notes": "NaN sorts after +inf, as torch.sort"},
        "determinism": "equivalence", "determinism_notes": "an unstable sort may order ties differently per run",
        "reduction": null, "cost": {"flops": "M*N", "bytes": "M*N*(2*elem_size + 8)"},
        "error_inputs": [], "error_inputs_note": "every input is valid",
        "forbidden_ops": ["aten::sort", "aten::argsort", "aten::topk"]})J",
    // Set equality (unique) with a data-dependent size, over integer keys.
    R"J({"schema_version": 1, "name": "unique", "semantics": "torch.unique(x, sorted=False)",
        "dims": {"N": {"min": 1, "max": 1048576, "typical": [1, 100, 5000], "zero_allowed": true},
                 "G": {"min": 1, "max": 65536, "typical": [1, 10, 1000]}},
        "inputs": [{"name": "x", "shapes": [["N"]], "dtypes": ["int64", "int32"],
                    "values": {"kind": "key", "below": "G", "distribution": "zipf", "alpha": 1.1},
                    "layouts": ["contiguous"]}],
        "attributes": [],
        "outputs": [{"name": "values", "shape": ["?"], "dtype": "same:x", "equivalence": "set",
                     "size_rule": "data_dependent", "max_size": "min(N, G)"}],
        "oracle": "unique", "tolerance": {"int64": {"mode": "exact", "reason": "keys are copied"}},
        "nan_inf": {"policy": "propagate"}, "determinism": "equivalence",
        "determinism_notes": "hash-based dedup emits values in any order",
        "reduction": null, "cost": {"flops": "N", "bytes": "2*N*elem_size"},
        "error_inputs": [], "error_inputs_note": "every input is valid",
        "forbidden_ops": ["aten::_unique2", "aten::unique_dim", "aten::sort"]})J",
    // A filter: data-dependent size, order kept.
    R"J({"schema_version": 1, "name": "masked_select", "semantics": "torch.masked_select(x, mask)",
        "dims": {"N": {"min": 1, "max": 16777216, "typical": [1, 7, 1000], "zero_allowed": true}},
        "inputs": [{"name": "x", "shapes": [["N"]], "dtypes": ["float32"], "layouts": ["contiguous"]},
                   {"name": "mask", "shapes": [["N"]], "dtypes": ["bool"], "values": {"kind": "bool"},
                    "layouts": ["contiguous"]}],
        "attributes": [],
        "outputs": [{"name": "y", "shape": ["?"], "dtype": "same:x", "size_rule": "data_dependent", "max_size": "N"}],
        "oracle": "masked_select",
        "tolerance": {"float32": {"mode": "exact", "reason": "copies selected values"}},
        "nan_inf": {"policy": "propagate"}, "determinism": "bitwise", "reduction": null,
        "cost": {"flops": "0", "bytes": "2*N*elem_size + N"},
        "error_inputs": [{"description": "mask of another length", "shapes": {"mask": ["N+1"]}}],
        "forbidden_ops": ["aten::masked_select", "aten::nonzero", "aten::index"]})J",
    // Bounded nondeterminism: atomics over skewed keys.
    R"J({"schema_version": 1, "name": "scatter_add", "semantics": "zeros(V, D).index_add_(0, idx, src)",
        "dims": {"N": {"min": 1, "max": 1048576, "typical": [1, 100, 5000]}, "D": {"min": 1, "max": 1024, "typical": [1, 16]},
                 "V": {"min": 1, "max": 65536, "typical": [1, 10, 1000]}},
        "inputs": [{"name": "src", "shapes": [["N", "D"]], "dtypes": ["float32", "float16"], "layouts": ["contiguous"]},
                   {"name": "idx", "shapes": [["N"]], "dtypes": ["int64"],
                    "values": {"kind": "key", "below": "V", "distribution": "zipf", "alpha": 1.5},
                    "layouts": ["contiguous"]}],
        "attributes": [],
        "outputs": [{"name": "y", "shape": ["V", "D"], "dtype": "same:src"}],
        "oracle": "scatter_add",
        "tolerance": {"float32": {"mode": "reduction", "ulps": 2, "c": 8, "ceiling_c": 1, "reason": "sums per key"},
                      "float16": {"mode": "reduction", "ulps": 2, "c": 8, "ceiling_c": 1, "reason": "sums per key"}},
        "nan_inf": {"policy": "propagate"},
        "determinism": "tolerance", "determinism_notes": "float atomics add in arrival order: runs differ within the tolerance",
        "reduction": {"K": "N", "identity": "0", "notes": "K bounds the largest group"},
        "cost": {"flops": "N*D", "bytes": "(2*N*D + V*D)*elem_size + 8*N"},
        "error_inputs": [{"description": "index >= V", "values": {"idx": {"kind": "index", "low": "V", "below": "2*V"}}}],
        "forbidden_ops": ["aten::index_add", "aten::index_add_", "aten::scatter_add", "aten::scatter_add_"]})J",
    // Group-by aggregation: keys as a set, sums aligned with the keys.
    R"J({"schema_version": 1, "name": "groupby_sum", "semantics": "sum of vals per distinct key",
        "dims": {"N": {"min": 1, "max": 1048576, "typical": [1, 100, 5000]}, "G": {"min": 1, "max": 65536, "typical": [1, 10, 1000]}},
        "inputs": [{"name": "vals", "shapes": [["N"]], "dtypes": ["float32"], "layouts": ["contiguous"]},
                   {"name": "keys", "shapes": [["N"]], "dtypes": ["int64"],
                    "values": {"kind": "key", "below": "G", "distribution": "zipf", "alpha": 1.2}, "layouts": ["contiguous"]}],
        "attributes": [],
        "outputs": [{"name": "group", "shape": ["?"], "dtype": "int64", "equivalence": "set",
                     "size_rule": "data_dependent", "max_size": "min(N, G)"},
                    {"name": "sum", "shape": ["?"], "dtype": "same:vals", "aligned_with": "group",
                     "size_rule": "data_dependent", "max_size": "min(N, G)"}],
        "oracle": "groupby_sum",
        "tolerance": {"float32": {"mode": "reduction", "ulps": 2, "c": 8, "ceiling_c": 1, "reason": "per-group sums"}},
        "nan_inf": {"policy": "propagate"}, "determinism": "equivalence",
        "determinism_notes": "group order follows hash-table arrival; sums are atomics-free per group",
        "reduction": {"K": "N", "identity": "n/a"},
        "cost": {"flops": "N", "bytes": "N*(elem_size + 8)"},
        "error_inputs": [{"description": "keys of another length", "shapes": {"keys": ["N+1"]}}],
        "forbidden_ops": ["aten::unique_dim", "aten::_unique2", "aten::index_add"]})J",
    // Segmented reduction over skewed segment lengths.
    R"J({"schema_version": 1, "name": "segment_sum", "semantics": "y[g] = sum(vals[offsets[g]:offsets[g+1]])",
        "dims": {"N": {"min": 1, "max": 1048576, "typical": [1, 100, 5000], "zero_allowed": true},
                 "G": {"min": 1, "max": 65536, "typical": [1, 10, 1000]}, "D": {"min": 1, "max": 512, "typical": [1, 8]}},
        "inputs": [{"name": "vals", "shapes": [["N", "D"]], "dtypes": ["float32", "bfloat16"], "layouts": ["contiguous", "strided"]},
                   {"name": "offsets", "shapes": [["G+1"]], "dtypes": ["int64"],
                    "values": {"kind": "offsets", "total": "N", "distribution": "zipf", "alpha": 2.0}, "layouts": ["contiguous"]}],
        "attributes": [],
        "outputs": [{"name": "y", "shape": ["G", "D"], "dtype": "same:vals"}],
        "oracle": "segment_sum",
        "tolerance": {"float32": {"mode": "reduction", "ulps": 2, "c": 8, "ceiling_c": 1, "reason": "segment sums"},
                      "bfloat16": {"mode": "reduction", "ulps": 2, "c": 8, "ceiling_c": 1, "reason": "segment sums"}},
        "nan_inf": {"policy": "propagate"}, "determinism": "bitwise",
        "reduction": {"K": "N", "identity": "0", "notes": "an empty segment sums to 0"},
        "cost": {"flops": "N*D", "bytes": "(N*D + G*D)*elem_size + 8*(G+1)"},
        "error_inputs": [{"description": "decreasing offsets", "values": {"offsets": {"kind": "integer", "low": "0", "below": "N+1"}}}],
        "forbidden_ops": ["aten::segment_reduce", "aten::_segment_reduce"]})J",
    // 8-bit quantized GEMM with per-tensor and per-channel scales, int8 first input.
    R"J({"schema_version": 1, "name": "int8_matmul", "semantics": "((a - 0) * a_scale) @ (b * b_scale[None, :]) in float32",
        "dims": {"M": {"min": 1, "max": 8192, "typical": [1, 64]}, "N": {"min": 1, "max": 8192, "typical": [1, 64]},
                 "K": {"min": 1, "max": 8192, "typical": [1, 128]}},
        "inputs": [{"name": "a", "shapes": [["M", "K"]], "dtypes": ["int8"],
                    "values": {"kind": "integer", "low": "-128", "below": "128"},
                    "quantization": {"scale": "a_scale"}, "layouts": ["contiguous"]},
                   {"name": "b", "shapes": [["K", "N"]], "dtypes": ["int8"],
                    "values": {"kind": "integer", "low": "-128", "below": "128"},
                    "quantization": {"scale": "b_scale", "axis": 1}, "layouts": ["contiguous", "transposed"]},
                   {"name": "a_scale", "shapes": [["1"]], "dtypes": ["float32"], "values": {"kind": "positive"}, "layouts": ["contiguous"]},
                   {"name": "b_scale", "shapes": [["N"]], "dtypes": ["float32"], "values": {"kind": "positive"}, "layouts": ["contiguous"]}],
        "attributes": [],
        "outputs": [{"name": "y", "shape": ["M", "N"], "dtype": "float32"}],
        "oracle": "int8_matmul",
        "tolerance": {"float32": {"mode": "ulp", "ulps": 2, "reason": "int32 accumulation is exact; two float32 scalings round once each"}},
        "nan_inf": {"policy": "propagate", "notes": "only the scales can carry NaN/inf"}, "determinism": "bitwise",
        "reduction": {"K": "K", "identity": "0"},
        "cost": {"flops": "2*M*N*K", "bytes": "M*K + K*N + 4*(1 + N + M*N)"},
        "error_inputs": [{"description": "inner dims differ", "shapes": {"b": ["K+1", "N"]}}],
        "forbidden_ops": ["aten::_int_mm", "aten::mm", "aten::matmul"]})J",
    // Join: a multiset of index pairs, data-dependent size.
    R"J({"schema_version": 1, "name": "inner_join", "semantics": "all (i, j) with left[i] == right[j]",
        "dims": {"NL": {"min": 1, "max": 65536, "typical": [1, 100]}, "NR": {"min": 1, "max": 65536, "typical": [1, 70]},
                 "G": {"min": 1, "max": 65536, "typical": [1, 16]}},
        "inputs": [{"name": "left", "shapes": [["NL"]], "dtypes": ["int64"],
                    "values": {"kind": "key", "below": "G", "distribution": "zipf", "alpha": 1.3}, "layouts": ["contiguous"]},
                   {"name": "right", "shapes": [["NR"]], "dtypes": ["int64"],
                    "values": {"kind": "key", "below": "G", "distribution": "all_distinct", "sorted": true}, "layouts": ["contiguous"]}],
        "attributes": [],
        "outputs": [{"name": "pairs", "shape": ["?", "2"], "dtype": "int64", "equivalence": "multiset",
                     "size_rule": "data_dependent", "max_size": "NL*NR"}],
        "oracle": "inner_join", "tolerance": {"int64": {"mode": "exact", "reason": "index pairs are exact"}},
        "nan_inf": {"policy": "ignore", "notes": "integer keys"}, "determinism": "equivalence",
        "determinism_notes": "pairs come out in hash-probe order",
        "reduction": null, "cost": {"flops": "NL + NR", "bytes": "8*(NL + NR)"},
        "error_inputs": [], "error_inputs_note": "every pair of key vectors is valid",
        "forbidden_ops": ["aten::eq", "aten::nonzero"]})J",
};

}  // namespace

// SPEC's group_by_sum takes its int64 keys first: the case dtype is then the values' (the first
// input that allows a floating dtype), the tolerance is keyed by it, and a tolerance keyed by the
// keys' int64 is refused.
TEST(Schema, AnOpWhoseKeysComeFirstIsVerifiedInItsValuesDtypes) {
  TempDir dir;
  json j;
  for (const char* text : kFutureOps)
    if (json::parse(text)["name"] == "groupby_sum") j = json::parse(text);
  ASSERT_FALSE(j.is_null());
  std::swap(j["inputs"][0], j["inputs"][1]);  // keys, then vals
  j["inputs"][1]["dtypes"] = json::array({"float32", "float16"});
  j["tolerance"]["float16"] = j["tolerance"]["float32"];
  std::vector<SchemaIssue> issues;
  auto s = load_schema_file(dir.write("groupby_sum.json", j.dump(2)), &issues);
  ASSERT_TRUE(s) << render(issues);
  ASSERT_TRUE(s->case_dtype_input());
  EXPECT_EQ(s->case_dtype_input()->name, "vals");
  EXPECT_EQ(s->case_dtypes(), (std::vector<DType>{DType::Float32, DType::Float16}));
  auto lint = lint_schema(*s, {});
  EXPECT_TRUE(lint.empty()) << render(lint);
  j["tolerance"]["int64"] = j["tolerance"]["float32"];
  auto keyed_by_keys = load_schema_file(dir.write("groupby_sum.json", j.dump(2)), &issues);
  ASSERT_TRUE(keyed_by_keys);
  lint = lint_schema(*keyed_by_keys, {});
  ASSERT_EQ(lint.size(), 1u) << render(lint);
  EXPECT_EQ(lint[0].field, "/tolerance/int64");
  EXPECT_NE(lint[0].message.find("no case dtype"), std::string::npos) << lint[0].message;
}

TEST(Schema, FutureOpFieldsParseAndLint) {
  TempDir dir;
  for (const char* text : kFutureOps) {
    json j = json::parse(text);
    std::string name = j["name"];
    std::string file = dir.write(name + ".json", j.dump(2));
    std::vector<SchemaIssue> issues;
    auto s = load_schema_file(file, &issues);
    ASSERT_TRUE(s) << name << "\n" << render(issues);
    auto lint = lint_schema(*s, {});  // an empty oracle list skips the oracle check
    EXPECT_TRUE(lint.empty()) << name << "\n" << render(lint);
  }
  std::vector<SchemaIssue> issues;
  auto sort = load_schema_file(dir.path() + "/sort.json", &issues);
  ASSERT_TRUE(sort);
  EXPECT_EQ(sort->outputs[1].equivalence, "permutation_of_ties");
  EXPECT_EQ(sort->outputs[1].tie_key, "values");
  EXPECT_EQ(sort->outputs[1].strict_when, "stable");
  auto q = load_schema_file(dir.path() + "/int8_matmul.json", &issues);
  ASSERT_TRUE(q);
  EXPECT_EQ(q->inputs[1].quant_scale, "b_scale");
  EXPECT_EQ(q->inputs[1].quant_axis.value_or(-9), 1);
  // The int8 data come first; the case dtype is the scales' (the first input allowing a float).
  ASSERT_TRUE(q->case_dtype_input());
  EXPECT_EQ(q->case_dtype_input()->name, "a_scale");
  EXPECT_EQ(q->case_dtypes(), std::vector<DType>{DType::Float32});
  EXPECT_TRUE(q->tolerance.count(DType::Float32));
  auto u = load_schema_file(dir.path() + "/unique.json", &issues);
  ASSERT_TRUE(u);
  EXPECT_EQ(u->case_dtypes(), u->inputs[0].dtypes) << "an op with no floating input keeps its integer dtypes";
  EXPECT_FALSE(u->case_dtypes().empty());
  EXPECT_EQ(u->outputs[0].size_rule, "data_dependent");
  EXPECT_EQ(u->outputs[0].dims, std::vector<std::string>{"?"});
  EXPECT_EQ(u->inputs[0].values.distribution, "zipf");
  EXPECT_DOUBLE_EQ(u->inputs[0].values.alpha.value_or(0), 1.1);
  auto seg = load_schema_file(dir.path() + "/segment_sum.json", &issues);
  ASSERT_TRUE(seg);
  EXPECT_EQ(seg->inputs[1].values.total, "N");
  EXPECT_TRUE(issues.empty()) << render(issues);
}

// The quantized ops (issue 20): SPEC's argument orders; quantize's x laid on its quantizer's grid
// (kind quantizable naming the scale and zero point attributes), NaN left out of the special inputs,
// the quantize-rounding tolerance; int8_matmul verified in its scales' float32, K capped for int32.
TEST(Schema, QuantizedOpsMatchTheSpecAndLintTheirNewFields) {
  std::vector<SchemaIssue> issues;
  auto q = load_schema_file(source_schemas() + "/quantize_per_tensor.json", &issues);
  ASSERT_TRUE(q) << render(issues);
  ASSERT_EQ(q->inputs.size(), 1u);
  EXPECT_EQ(q->inputs[0].values.kind, "quantizable");
  EXPECT_EQ(q->inputs[0].values.scale, "scale");
  EXPECT_EQ(q->inputs[0].values.zero_point, "zero_point");
  ASSERT_EQ(q->attributes.size(), 2u);
  EXPECT_EQ(q->attributes[0].name, "scale");
  EXPECT_EQ(q->attributes[0].type, "double");
  EXPECT_EQ(q->attributes[1].name, "zero_point");
  EXPECT_EQ(q->attributes[1].type, "int64");
  EXPECT_EQ(q->outputs[0].dtype, "int8");
  EXPECT_EQ(q->tolerance.at(DType::Float32).mode, "quantize-rounding");
  EXPECT_EQ(q->nan_inf_inputs, (std::vector<std::string>{"+inf", "-inf"}));
  // Every scale is a float32 whose reciprocal is finite in float32 (the oracle's domain).
  for (const AttrValue& v : q->attributes[0].values) {
    const double d = std::get<double>(v);
    EXPECT_EQ(double(float(d)), d);
    EXPECT_TRUE(std::isfinite(1.0f / float(d))) << d;
  }
  auto m = load_schema_file(source_schemas() + "/int8_matmul.json", &issues);
  ASSERT_TRUE(m) << render(issues);
  std::vector<std::string> ins;
  for (const auto& i : m->inputs) ins.push_back(i.name);
  EXPECT_EQ(ins, (std::vector<std::string>{"a", "b", "a_scale", "b_scale"}));
  EXPECT_EQ(m->case_dtypes(), std::vector<DType>{DType::Float32});
  EXPECT_LE(m->dims.at("K").max * 128 * 128, int64_t(1) << 30) << "int32 never overflows";
  // Planted lint failures: a quantizable input without a scale, a scale naming an int64 attribute,
  // a zero point naming a double one, an unknown special input, special inputs left out silently.
  const json base = read_json(source_schemas() + "/quantize_per_tensor.json");
  auto lint_of = [&](const std::function<void(json&)>& edit) {
    json j = base;
    edit(j);
    static TempDir dir;
    return render(lint_schema_file(dir.write("quantize_per_tensor.json", j.dump()), {}));
  };
  EXPECT_EQ(lint_of([](json&) {}), "");
  EXPECT_NE(lint_of([](json& j) { j["inputs"][0]["values"].erase("scale"); }).find("needs \"scale\""), std::string::npos);
  EXPECT_NE(lint_of([](json& j) { j["inputs"][0]["values"]["scale"] = "zero_point"; }).find("no double attribute"),
            std::string::npos);
  EXPECT_NE(lint_of([](json& j) { j["inputs"][0]["values"]["zero_point"] = "scale"; }).find("no int64 attribute"),
            std::string::npos);
  EXPECT_NE(lint_of([](json& j) { j["inputs"][0]["dtypes"] = {"int8"}; }).find("does not fit dtype int8"), std::string::npos);
  EXPECT_NE(lint_of([](json& j) { j["nan_inf"]["inputs"] = {"nan", "inf"}; }).find("unknown special value"), std::string::npos);
  EXPECT_NE(lint_of([](json& j) { j["nan_inf"].erase("notes"); }).find("need notes"), std::string::npos);
  EXPECT_NE(lint_of([](json& j) { j["inputs"][0]["values"] = {{"kind", "real"}, {"scale", "scale"}}; }).find("applies to kind quantizable"),
            std::string::npos);
}

// dequantize (issue 20): int8 data first, so its case dtype is int8 and its exact tolerance keyed so;
// the quantization field names the per-tensor scale and zero point attributes (double, int64), and
// lint holds it to those types; every scale a float32, whose products with +-255 stay finite.
TEST(Schema, DequantizeNamesItsQuantizerAttributes) {
  std::vector<SchemaIssue> issues;
  auto d = load_schema_file(source_schemas() + "/dequantize.json", &issues);
  ASSERT_TRUE(d) << render(issues);
  ASSERT_EQ(d->inputs.size(), 1u);
  EXPECT_EQ(d->inputs[0].dtypes, std::vector<DType>{DType::Int8});
  EXPECT_EQ(d->inputs[0].values.kind, "integer");
  EXPECT_EQ(d->inputs[0].values.low, "-128");
  EXPECT_EQ(d->inputs[0].values.below, "128");
  EXPECT_EQ(d->inputs[0].quant_scale, "scale");
  EXPECT_EQ(d->inputs[0].quant_zero_point, "zero_point");
  EXPECT_FALSE(d->inputs[0].quant_axis);
  ASSERT_EQ(d->attributes.size(), 2u);
  EXPECT_EQ(d->attributes[0].type, "double");
  EXPECT_EQ(d->attributes[1].type, "int64");
  EXPECT_EQ(d->outputs[0].dtype, "float32");
  EXPECT_EQ(d->case_dtypes(), std::vector<DType>{DType::Int8});
  EXPECT_EQ(d->tolerance.at(DType::Int8).mode, "exact");
  bool subnormal = false;
  for (const AttrValue& v : d->attributes[0].values) {
    const double s = std::get<double>(v);
    EXPECT_EQ(double(float(s)), s) << s;
    EXPECT_GT(s, 0.0);
    EXPECT_TRUE(std::isfinite(255.0f * float(s))) << s;
    subnormal |= float(s) < std::numeric_limits<float>::min();
  }
  EXPECT_TRUE(subnormal) << "a float32-subnormal scale";
  std::set<int64_t> zps;
  for (const AttrValue& v : d->attributes[1].values) zps.insert(std::get<int64_t>(v));
  for (int64_t z : {-128, -127, 0, 126, 127}) EXPECT_TRUE(zps.count(z)) << z;
  for (const char* op : {"aten::dequantize", "aten::_make_per_tensor_quantized_tensor", "aten::int_repr"})
    EXPECT_NE(std::find(d->forbidden_ops.begin(), d->forbidden_ops.end(), op), d->forbidden_ops.end()) << op;
  // Planted lint failures of the quantization field.
  const json base = read_json(source_schemas() + "/dequantize.json");
  auto lint_of = [&](const std::function<void(json&)>& edit) {
    json j = base;
    edit(j);
    static TempDir dir;
    return render(lint_schema_file(dir.write("dequantize.json", j.dump()), {}));
  };
  EXPECT_EQ(lint_of([](json&) {}), "");
  EXPECT_NE(lint_of([](json& j) { j["inputs"][0]["quantization"]["scale"] = "zero_point"; }).find("is no double"),
            std::string::npos);
  EXPECT_NE(lint_of([](json& j) { j["inputs"][0]["quantization"]["zero_point"] = "scale"; }).find("is no int64"),
            std::string::npos);
  EXPECT_NE(lint_of([](json& j) { j["inputs"][0]["quantization"]["axis"] = 0; }).find("no axis"), std::string::npos);
  EXPECT_NE(lint_of([](json& j) { j["inputs"][0]["quantization"]["scale"] = "s"; }).find("unknown scale input or attribute"),
            std::string::npos);
  EXPECT_NE(lint_of([](json& j) { j["inputs"][0]["quantization"]["zero_point"] = "zp"; }).find("unknown zero-point"),
            std::string::npos);
}

// values.structure (a matrix problem's triangular, symmetric or diagonal inputs): read, and linted
// for its name, its kind, its rank and, for symmetric, square last dims.
TEST(Schema, ValueStructuresAreReadAndLinted) {
  const json matmul = read_json(source_schemas() + "/matmul.json");
  auto lint_of = [&](const std::function<void(json&)>& edit) {
    json j = matmul;
    edit(j);
    static TempDir dir;
    std::string file = dir.write("matmul.json", j.dump());
    std::vector<SchemaIssue> issues;
    auto s = load_schema_file(file, &issues);
    return std::make_tuple(file, lint_schema_file(file, {}), s);
  };
  {
    auto [file, issues, s] = lint_of([](json& j) { j["inputs"][0]["values"]["structure"] = "lower-triangular"; });
    ASSERT_TRUE(s);
    EXPECT_EQ(s->inputs[0].values.structure, "lower-triangular");
    EXPECT_TRUE(issues.empty()) << render(issues);
  }
  struct Bad {
    std::function<void(json&)> edit;
    const char* message;
  };
  const std::vector<Bad> bad = {
      {[](json& j) { j["inputs"][0]["values"]["structure"] = "banded"; }, "unknown structure \"banded\""},
      {[](json& j) { j["inputs"][0]["values"]["structure"] = "symmetric"; }, "same dim (square matrices)"},
      {[](json& j) { j["inputs"][0]["shapes"] = json::array({json::array({"K"})}); j["inputs"][0]["values"]["structure"] = "diagonal"; },
       "rank >= 2"},
  };
  for (const Bad& b : bad) {
    auto [file, issues, s] = lint_of(b.edit);
    EXPECT_TRUE(has_issue(issues, file, "/inputs/0/values/structure", b.message)) << b.message << "\n" << render(issues);
  }
}

TEST(Schema, FutureOpFieldsAreLinted) {
  auto lint_of = [](const char* text, const std::function<void(json&)>& edit) {
    json j = json::parse(text);
    edit(j);
    static TempDir dir;
    std::string file = dir.write(j["name"].get<std::string>() + ".json", j.dump());
    return std::make_pair(file, lint_schema_file(file, {}));
  };
  const char* sort = kFutureOps[0];
  const char* unique = kFutureOps[1];
  const char* scatter = kFutureOps[3];
  const char* groupby = kFutureOps[4];
  const char* quant = kFutureOps[6];
  struct Case {
    const char* text;
    std::function<void(json&)> edit;
    const char* field;
    const char* message;
  };
  const std::vector<Case> cases = {
      {sort, [](json& j) { j["outputs"][1].erase("tie_key"); }, "/outputs/1/tie_key", "needs \"tie_key\""},
      {sort, [](json& j) { j["outputs"][1]["tie_key"] = "vals"; }, "/outputs/1/tie_key", "unknown output"},
      {sort, [](json& j) { j["outputs"][1]["equivalence"] = "permuted"; }, "/outputs/1/equivalence", "unknown equivalence"},
      {sort, [](json& j) { j["outputs"][1]["strict_when"] = "stabel"; }, "/outputs/1/strict_when", "not a bool attribute"},
      {sort, [](json& j) { j.erase("determinism_notes"); }, "/determinism_notes", "needs determinism_notes"},
      {unique, [](json& j) { j["outputs"][0]["shape"] = json::array({"N"}); }, "/outputs/0/shape", "exactly one \"?\""},
      {unique, [](json& j) { j["outputs"][0].erase("max_size"); }, "/outputs/0/max_size", "needs \"max_size\""},
      {unique, [](json& j) { j["outputs"][0]["size_rule"] = "static"; }, "/outputs/0/shape", "needs size_rule data_dependent"},
      {unique, [](json& j) { j["inputs"][0]["values"].erase("alpha"); }, "/inputs/0/values/alpha", "needs \"alpha\""},
      {unique, [](json& j) { j["inputs"][0]["values"]["distribution"] = "zipfian"; }, "/inputs/0/values/distribution", "unknown distribution"},
      {unique, [](json& j) { j["inputs"][0]["dtypes"][0] = "float32"; }, "/inputs/0/values/kind", "does not fit dtype float32"},
      {sort, [](json& j) { j["inputs"][0]["dtypes"][3] = "bool"; }, "/inputs/0/values/kind", "does not fit dtype bool"},
      {unique, [](json& j) { j["dims"]["Z"] = j["dims"]["G"]; }, "/dims/Z", "used by no input shape or value domain"},
      {scatter, [](json& j) { j["determinism"] = "loose"; }, "/determinism", "unknown determinism"},
      {groupby, [](json& j) { j["outputs"][1]["aligned_with"] = "sum"; }, "/outputs/1/aligned_with", "unknown output"},
      {groupby, [](json& j) { j["outputs"][0]["equivalence"] = "elementwise"; }, "/outputs/1/aligned_with", "alignment needs"},
      {quant, [](json& j) { j["inputs"][0]["quantization"]["scale"] = "s"; }, "/inputs/0/quantization/scale", "unknown scale input"},
      {quant, [](json& j) { j["inputs"][0]["dtypes"][0] = "float16"; }, "/inputs/0/dtypes", "non-integer dtype"},
      {quant, [](json& j) { j["inputs"][0]["quantization"]["scael"] = "a_scale"; }, "/inputs/0/quantization/scael", "did you mean \"scale\""},
  };
  for (const auto& c : cases) {
    auto [file, issues] = lint_of(c.text, c.edit);
    EXPECT_TRUE(has_issue(issues, file, c.field, c.message)) << c.field << " / " << c.message << "\n" << render(issues);
  }
}

// An attribute tied to a dim's size (size_of) and keys rotating through distributions (also):
// each misuse is reported at its field.
TEST(Schema, SizeOfAndAlsoAreLinted) {
  TempDir dir;
  const std::vector<std::tuple<std::function<void(json&)>, std::string, std::string>> cases = {
      {[](json& j) { j["attributes"][0]["size_of"] = "Q"; }, "/attributes/0/size_of", "unknown dim \"Q\""},
      {[](json& j) {
         j["attributes"][0]["type"] = "double";
         j["attributes"][0]["default"] = 64.0;
       },
       "/attributes/0/size_of", "size_of needs type int64"},
      {[](json& j) { j["attributes"][0]["values"] = json::array({64}); }, "/attributes/0/values", "no \"values\""},
      {[](json& j) { j["inputs"][0]["values"]["also"][1] = "all_same"; }, "/inputs/0/values/also/1", "unknown distribution"},
      {[](json& j) {
         j["inputs"][0]["values"]["distribution"] = "uniform";
         j["inputs"][0]["values"]["also"] = json::array({"zipf"});
         j["inputs"][0]["values"].erase("alpha");
       },
       "/inputs/0/values/alpha", "needs \"alpha\""},
  };
  for (const auto& [edit, field, message] : cases) {
    auto m = mutate(dir, "group_by_sum", edit);
    EXPECT_TRUE(has_issue(m.issues, m.file, field, message)) << field << " / " << message << "\n" << render(m.issues);
  }
  // A dim may not take a function's name; an attribute may (scatter_add's `size`, whose output
  // shape ["size"] reads it as a name).
  auto dim_named_size = mutate(dir, "group_by_sum", [](json& j) {
    j["dims"]["size"] = j["dims"]["G"];
    j["dims"].erase("G");
    j["inputs"][0]["values"]["below"] = "size";
    j["attributes"][0]["size_of"] = "size";
  });
  EXPECT_TRUE(has_issue(dim_named_size.issues, dim_named_size.file, "/dims/size", "reserved by the expression language"))
      << render(dim_named_size.issues);
  std::string why;
  EXPECT_EQ(eval_expr("size", {{"size", 7}}, &why), 7) << why;
  // zipf among "also" alone is enough for alpha; the shipped schema lints clean.
  auto ok = mutate(dir, "group_by_sum", [](json& j) {
    j["inputs"][0]["values"]["distribution"] = "uniform";
    j["inputs"][0]["values"]["also"] = json::array({"zipf"});
  });
  EXPECT_TRUE(ok.issues.empty()) << render(ok.issues);
}

TEST(Schema, DefaultSchemaDir) {
  const char* old = std::getenv("GAUNTLET_SCHEMAS");
  std::string saved = old ? old : "";
  setenv("GAUNTLET_SCHEMAS", "/some/where/opschemas", 1);
  EXPECT_EQ(default_schema_dir(), "/some/where/opschemas");
  unsetenv("GAUNTLET_SCHEMAS");
  std::string d = default_schema_dir();
  EXPECT_GE(d.size(), 9u);
  EXPECT_EQ(d.substr(d.size() - 9), "opschemas");
  EXPECT_TRUE(fs::is_directory(d)) << d;
  if (old) setenv("GAUNTLET_SCHEMAS", saved.c_str(), 1);
}
