// Names and sizes of gauntlet's core value types (see include/gauntlet/common/types.h).
#include "gauntlet/common/types.h"

#include <cstdio>
#include <cstdlib>

namespace gauntlet {

namespace {

struct DTypeInfo {
  DType dtype;
  const char* name;
  int size;
  bool floating;
};

// Indexed by the DType code (codes are dense from 0).
constexpr DTypeInfo kDTypes[] = {
    {DType::Float32, "float32", 4, true},  {DType::Float16, "float16", 2, true},
    {DType::BFloat16, "bfloat16", 2, true}, {DType::Float64, "float64", 8, true},
    {DType::Int64, "int64", 8, false},     {DType::Int32, "int32", 4, false},
    {DType::Bool, "bool", 1, false},       {DType::Int8, "int8", 1, false},
    {DType::UInt8, "uint8", 1, false},     {DType::Float8E4M3, "float8_e4m3fn", 1, true},
};
constexpr size_t kNumDTypes = sizeof(kDTypes) / sizeof(kDTypes[0]);

const DTypeInfo* info(DType d) {
  const auto code = static_cast<size_t>(d);
  if (code >= kNumDTypes) return nullptr;
  return &kDTypes[code];
}

}  // namespace

const char* dtype_name(DType d) {
  const DTypeInfo* i = info(d);
  return i ? i->name : "unknown";
}

std::optional<DType> dtype_from_name(const std::string& name) {
  for (const DTypeInfo& i : kDTypes) {
    if (name == i.name) return i.dtype;
  }
  return std::nullopt;
}

int dtype_size(DType d) {
  const DTypeInfo* i = info(d);
  return i ? i->size : 0;
}

bool dtype_is_floating(DType d) {
  const DTypeInfo* i = info(d);
  return i && i->floating;
}

double attr_as_double(const AttrValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return double(*i);
  if (const auto* d = std::get_if<double>(&v)) return *d;
  return std::get<bool>(v) ? 1.0 : 0.0;
}

std::string attr_to_string(const AttrValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  // double: the shortest of %.15g..%.17g that reads back to the same value (%.17g always does),
  // so 0.1 prints as "0.1". Non-finite values print as inf, -inf, nan.
  const double d = std::get<double>(v);
  char buf[40];
  for (int precision = 15; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, d);
    if (precision == 17 || std::strtod(buf, nullptr) == d) break;
  }
  return buf;
}

const char* status_name(Status s) {
  switch (s) {
    case Status::Pass: return "pass";
    case Status::Fail: return "fail";
    case Status::Error: return "error";
    case Status::Skip: return "skip";
    case Status::HarnessError: return "harness-error";
  }
  return "unknown";
}

const char* category_name(Category c) {
  switch (c) {
    case Category::None: return "";
    case Category::BuildError: return "build-error";
    case Category::LoadError: return "load-error";
    case Category::RuntimeError: return "runtime-error";
    case Category::Crash: return "crash";
    case Category::Timeout: return "timeout";
    case Category::OutOfMemory: return "out-of-memory";
    case Category::WrongResult: return "wrong-result";
    case Category::HarnessError: return "harness-error";
  }
  return "unknown";
}

}  // namespace gauntlet
