// Tests for src/common/types.cpp: dtype names and sizes, attribute printing, verdict names.
#include "gauntlet/common/types.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>

namespace gauntlet {
namespace {

struct Expected {
  DType dtype;
  const char* name;
  int size;
  bool floating;
};

const Expected kAll[] = {
    {DType::Float32, "float32", 4, true},  {DType::Float16, "float16", 2, true},
    {DType::BFloat16, "bfloat16", 2, true}, {DType::Float64, "float64", 8, true},
    {DType::Int64, "int64", 8, false},     {DType::Int32, "int32", 4, false},
    {DType::Bool, "bool", 1, false},       {DType::Int8, "int8", 1, false},
    {DType::UInt8, "uint8", 1, false},
};

TEST(Types, DTypeCodesAreStable) {
  EXPECT_EQ(static_cast<int>(DType::Float32), 0);
  EXPECT_EQ(static_cast<int>(DType::Float16), 1);
  EXPECT_EQ(static_cast<int>(DType::BFloat16), 2);
  EXPECT_EQ(static_cast<int>(DType::Float64), 3);
  EXPECT_EQ(static_cast<int>(DType::Int64), 4);
  EXPECT_EQ(static_cast<int>(DType::Int32), 5);
  EXPECT_EQ(static_cast<int>(DType::Bool), 6);
  EXPECT_EQ(static_cast<int>(DType::Int8), 7);
  EXPECT_EQ(static_cast<int>(DType::UInt8), 8);
}

TEST(Types, DTypeNamesSizesAndRoundTrip) {
  for (const Expected& e : kAll) {
    SCOPED_TRACE(e.name);
    EXPECT_STREQ(dtype_name(e.dtype), e.name);
    EXPECT_EQ(dtype_size(e.dtype), e.size);
    EXPECT_EQ(dtype_is_floating(e.dtype), e.floating);
    const auto back = dtype_from_name(e.name);
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(*back, e.dtype);
  }
}

TEST(Types, DTypeFromUnknownName) {
  EXPECT_FALSE(dtype_from_name("").has_value());
  EXPECT_FALSE(dtype_from_name("half").has_value());
  EXPECT_FALSE(dtype_from_name("Float32").has_value());
  EXPECT_FALSE(dtype_from_name("float32 ").has_value());
  EXPECT_FALSE(dtype_from_name("complex64").has_value());
}

TEST(Types, AttrToStringInt) {
  EXPECT_EQ(attr_to_string(AttrValue{int64_t{0}}), "0");
  EXPECT_EQ(attr_to_string(AttrValue{int64_t{-3}}), "-3");
  EXPECT_EQ(attr_to_string(AttrValue{std::numeric_limits<int64_t>::max()}),
            "9223372036854775807");
  EXPECT_EQ(attr_to_string(AttrValue{std::numeric_limits<int64_t>::min()}),
            "-9223372036854775808");
}

TEST(Types, AttrToStringBool) {
  EXPECT_EQ(attr_to_string(AttrValue{true}), "true");
  EXPECT_EQ(attr_to_string(AttrValue{false}), "false");
}

TEST(Types, AttrToStringDoubleIsShortestRoundTrip) {
  EXPECT_EQ(attr_to_string(AttrValue{0.1}), "0.1");
  EXPECT_EQ(attr_to_string(AttrValue{1.0}), "1");
  EXPECT_EQ(attr_to_string(AttrValue{-2.5}), "-2.5");
  EXPECT_EQ(attr_to_string(AttrValue{1e-5}), "1e-05");
  EXPECT_EQ(attr_to_string(AttrValue{std::numeric_limits<double>::infinity()}), "inf");
  EXPECT_EQ(attr_to_string(AttrValue{-std::numeric_limits<double>::infinity()}), "-inf");
  // Values that need all 17 digits still read back exactly.
  for (double d : {1.0 / 3.0, 0.1 + 0.2, 5e-324, 1.7976931348623157e308, -123456.789e-200}) {
    const std::string s = attr_to_string(AttrValue{d});
    EXPECT_EQ(std::strtod(s.c_str(), nullptr), d) << s;
  }
}

TEST(Types, StatusNames) {
  EXPECT_STREQ(status_name(Status::Pass), "pass");
  EXPECT_STREQ(status_name(Status::Fail), "fail");
  EXPECT_STREQ(status_name(Status::Error), "error");
  EXPECT_STREQ(status_name(Status::Skip), "skip");
  EXPECT_STREQ(status_name(Status::HarnessError), "harness-error");
}

TEST(Types, CategoryNames) {
  EXPECT_STREQ(category_name(Category::None), "");
  EXPECT_STREQ(category_name(Category::BuildError), "build-error");
  EXPECT_STREQ(category_name(Category::LoadError), "load-error");
  EXPECT_STREQ(category_name(Category::RuntimeError), "runtime-error");
  EXPECT_STREQ(category_name(Category::Crash), "crash");
  EXPECT_STREQ(category_name(Category::Timeout), "timeout");
  EXPECT_STREQ(category_name(Category::OutOfMemory), "out-of-memory");
  EXPECT_STREQ(category_name(Category::WrongResult), "wrong-result");
  EXPECT_STREQ(category_name(Category::HarnessError), "harness-error");
}

}  // namespace
}  // namespace gauntlet
