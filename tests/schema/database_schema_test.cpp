// unique and hash_join (issue 20): SPEC's arguments, int64 case dtype judged exactly, data-dependent
// outputs, keys rotating through every skew and the ends of int64; int64_limits linted to int64 keys.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gauntlet/schema/schema.h"

using namespace gauntlet;
using json = nlohmann::json;

namespace {

std::string schema_path(const std::string& op) { return std::string(GAUNTLET_SOURCE_DIR) + "/opschemas/" + op + ".json"; }

std::string render(const std::vector<SchemaIssue>& issues) {
  std::string r;
  for (const auto& i : issues) r += "  " + i.field + ": " + i.message + "\n";
  return r;
}

// The lint issues of an edited copy of a shipped schema (written under its own name, which lint checks).
std::string lint_edited(const std::string& op, const std::function<void(json&)>& edit) {
  std::ifstream in(schema_path(op));
  json j = json::parse(in);
  edit(j);
  const std::string dir = "/tmp/gauntlet-dbschema-" + std::to_string(getpid());
  ::mkdir(dir.c_str(), 0700);
  const std::string file = dir + "/" + op + ".json";
  std::ofstream(file) << j.dump(2);
  const std::string issues = render(lint_schema_file(file, {}));
  std::remove(file.c_str());
  ::rmdir(dir.c_str());
  return issues;
}

TEST(DatabaseSchemas, UniqueAndHashJoinFollowTheSpec) {
  std::vector<SchemaIssue> issues;
  auto u = load_schema_file(schema_path("unique"), &issues);
  ASSERT_TRUE(u) << render(issues);
  ASSERT_EQ(u->inputs.size(), 1u);
  EXPECT_EQ(u->inputs[0].name, "x");
  EXPECT_EQ(u->inputs[0].dtypes, std::vector<DType>{DType::Int64});
  EXPECT_EQ(u->case_dtypes(), std::vector<DType>{DType::Int64}) << "no floating input: verified in x's int64";
  EXPECT_EQ(u->tolerance.at(DType::Int64).mode, "exact");
  ASSERT_EQ(u->outputs.size(), 2u);
  for (const OutputSpec& o : u->outputs) {
    EXPECT_TRUE(o.data_dependent()) << o.name;
    EXPECT_EQ(o.max_size, "N") << o.name;
    EXPECT_EQ(o.dtype, "int64") << o.name;
  }
  EXPECT_EQ(u->outputs[0].name, "values");
  EXPECT_EQ(u->outputs[1].name, "counts");
  // Every skew, and the ends of int64; 2^16 +- 1 among the hazards (a 16-bit counter's wrap).
  const ValueDomain& x = u->inputs[0].values;
  EXPECT_EQ(x.kind, "key");
  EXPECT_EQ(x.distribution, "zipf");
  EXPECT_EQ(x.also, (std::vector<std::string>{"all_equal", "all_distinct", "sorted_runs", "uniform", "int64_limits"}));
  const auto& hz = u->dims.at("N").hazards;
  EXPECT_NE(std::find(hz.begin(), hz.end(), 65536), hz.end());
  EXPECT_LE(u->dims.at("R").max, int64_t(1) << 61) << "[-R, R) spans at most 2^62";

  auto h = load_schema_file(schema_path("hash_join"), &issues);
  ASSERT_TRUE(h) << render(issues);
  ASSERT_EQ(h->inputs.size(), 2u);
  EXPECT_EQ(h->inputs[0].name, "left");
  EXPECT_EQ(h->inputs[1].name, "right");
  EXPECT_EQ(h->case_dtypes(), std::vector<DType>{DType::Int64});
  EXPECT_EQ(h->tolerance.at(DType::Int64).mode, "exact");
  ASSERT_EQ(h->outputs.size(), 1u);
  EXPECT_TRUE(h->outputs[0].data_dependent());
  EXPECT_EQ(h->outputs[0].dims, (std::vector<std::string>{"?", "2"}));
  EXPECT_EQ(h->outputs[0].max_size, "N*M");
  // P = N*M when every key is equal: the constraint keeps the largest output at 2^22 pairs.
  EXPECT_EQ(h->constraints, std::vector<std::string>{"N*M <= 4194304"});
  for (const InputSpec& in : h->inputs) {
    EXPECT_EQ(in.values.below, "R") << in.name;
    EXPECT_NE(std::find(in.values.also.begin(), in.values.also.end(), "int64_limits"), in.values.also.end()) << in.name;
  }
}

// Planted lint failures: int64_limits on offsets (they must stay monotone in [0, total]) and on a
// key domain of int32 (which cannot hold the ends of int64).
TEST(DatabaseSchemas, Int64LimitsLintsToInt64Keys) {
  EXPECT_EQ(lint_edited("unique", [](json&) {}), "");
  EXPECT_NE(lint_edited("unique", [](json& j) { j["inputs"][0]["dtypes"] = {"int32"}; }).find("int64_limits needs dtype int64"),
            std::string::npos);
  EXPECT_NE(lint_edited("segment_sum", [](json& j) { j["inputs"][1]["values"]["distribution"] = "int64_limits"; })
                .find("int64_limits applies to kind key only"),
            std::string::npos);
  EXPECT_NE(lint_edited("unique", [](json& j) { j["inputs"][0]["values"]["also"][0] = "int64_limit"; })
                .find("unknown distribution"),
            std::string::npos);
}

}  // namespace
