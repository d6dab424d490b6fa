// Core value types shared by the parent, the worker and the builder: dtypes, attributes, verdicts.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace gauntlet {

// The dtypes gauntlet knows. Codes are part of the wire format and replay files: never renumber.
enum class DType : uint8_t {
  Float32 = 0,
  Float16 = 1,
  BFloat16 = 2,
  Float64 = 3,
  Int64 = 4,
  Int32 = 5,
  Bool = 6,
  Int8 = 7,
  UInt8 = 8,
  // OCP FP8 E4M3 ("fn": finite, no infinity; NaN is S.1111.111; max 448). Only where LibTorch has
  // it (2.1 and later): wire::dtype_unavailable says why not elsewhere.
  Float8E4M3 = 9,
};
constexpr DType kLastDType = DType::Float8E4M3;

const char* dtype_name(DType d);                      // "float32", ...
std::optional<DType> dtype_from_name(const std::string& name);
int dtype_size(DType d);                              // bytes per element
bool dtype_is_floating(DType d);

// An op attribute value: int64, double or bool (the SPEC's attribute types).
using AttrValue = std::variant<int64_t, double, bool>;
using AttrMap = std::map<std::string, AttrValue>;
std::string attr_to_string(const AttrValue& v);
// The value as a number (a bool as 0 or 1): what schema expressions and ranges compare.
double attr_as_double(const AttrValue& v);

// Gate verdict vocabulary (SPEC: pass, fail, error, skip, harness-error).
enum class Status { Pass, Fail, Error, Skip, HarnessError };
const char* status_name(Status s);
// A gate that did not pass or skip: a fail, an error or a harness error (timing runs only without one).
inline bool is_failing(Status s) { return s == Status::Fail || s == Status::Error || s == Status::HarnessError; }

// Failure categories (SPEC, fixed names).
enum class Category {
  None,
  BuildError,
  LoadError,
  RuntimeError,
  Crash,
  Timeout,
  OutOfMemory,
  WrongResult,
  HarnessError,
};
const char* category_name(Category c);  // "" for None, else "build-error", ...

}  // namespace gauntlet
