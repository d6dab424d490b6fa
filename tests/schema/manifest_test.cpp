// Tests of kernel manifests: valid fields, and one-line errors that name the file and the field.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "gauntlet/schema/manifest.h"

using namespace gauntlet;

namespace {

std::string write_temp(const std::string& text) {
  char name[] = "/tmp/gauntlet-manifest-XXXXXX.json";
  int fd = mkstemps(name, 5);
  std::FILE* f = fdopen(fd, "w");
  std::fputs(text.c_str(), f);
  std::fclose(f);
  return name;
}

TEST(Manifest, LoadsEveryField) {
  std::string p = write_temp(R"({"op": "softmax", "source": "k.cpp", "entry": "fwd", "device": "cpu",
     "dtypes": ["float16", "float32"], "attrs": {"dim": -1, "eps": 0.5, "causal": true},
     "shapes": {"N": {"max": 8192}}})");
  std::string error;
  auto m = load_manifest(p, &error);
  ASSERT_TRUE(m) << error;
  EXPECT_EQ(m->op, "softmax");
  EXPECT_EQ(m->source, "/tmp/k.cpp");
  EXPECT_EQ(m->entry, "fwd");
  EXPECT_EQ(m->dtypes, (std::vector<DType>{DType::Float16, DType::Float32}));
  EXPECT_EQ(std::get<int64_t>(m->attrs["dim"]), -1);
  EXPECT_EQ(std::get<double>(m->attrs["eps"]), 0.5);
  EXPECT_TRUE(std::get<bool>(m->attrs["causal"]));
  EXPECT_EQ(*m->shapes["N"].max, 8192);
  std::remove(p.c_str());
}

TEST(Manifest, ErrorsNameTheFileAndField) {
  struct Bad {
    const char* json;
    const char* field;
  } cases[] = {
      {R"({"source": "k.cpp"})", "'op'"},
      {R"({"op": "relu"})", "'source'"},
      {R"({"op": "relu", "source": "k.cpp", "dtypes": ["float17"]})", "'dtypes'"},
      {R"({"op": "relu", "source": "k.cpp", "device": "tpu"})", "'device'"},
      {R"({"op": "relu", "source": "k.cpp", "sauce": 1})", "'sauce'"},
      {R"({"op": "relu", "source": "k.cpp", "shapes": {"N": {"max": -3}}})", "'shapes/N/max'"},
      {R"({"op": "relu", "source": "k.cpp", "attrs": {"dim": "last"}})", "'attrs/dim'"},
      {R"({"op": "relu", "source": )", "malformed JSON"},
  };
  for (const Bad& b : cases) {
    std::string p = write_temp(b.json);
    std::string error;
    EXPECT_FALSE(load_manifest(p, &error)) << b.json;
    EXPECT_NE(error.find(p), std::string::npos) << error;
    EXPECT_NE(error.find(b.field), std::string::npos) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << "one line: " << error;
    std::remove(p.c_str());
  }
  std::string error;
  EXPECT_FALSE(load_manifest("/nonexistent/kernel.json", &error));
  EXPECT_NE(error.find("/nonexistent/kernel.json"), std::string::npos);
}

TEST(Manifest, AttrFlags) {
  std::string key, error;
  AttrValue v;
  ASSERT_TRUE(parse_attr_flag("dim=-1", &key, &v, &error));
  EXPECT_EQ(key, "dim");
  EXPECT_EQ(std::get<int64_t>(v), -1);
  ASSERT_TRUE(parse_attr_flag("eps=1e-5", &key, &v, &error));
  EXPECT_EQ(std::get<double>(v), 1e-5);
  ASSERT_TRUE(parse_attr_flag("causal=true", &key, &v, &error));
  EXPECT_TRUE(std::get<bool>(v));
  EXPECT_FALSE(parse_attr_flag("dim", &key, &v, &error));
  EXPECT_FALSE(parse_attr_flag("dim=minus one", &key, &v, &error));
}

}  // namespace
