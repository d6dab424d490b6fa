// gauntlet's dtypes as ATen's scalar types, and what this LibTorch lacks (float8 before PyTorch 2.1).
#include "gauntlet/common/aten_dtypes.h"

#include <algorithm>

#include <torch/version.h>

// float8_e4m3fn came to ATen in PyTorch 2.1.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
#define GAUNTLET_TORCH_HAS_FLOAT8 1
#else
#define GAUNTLET_TORCH_HAS_FLOAT8 0
#endif

namespace gauntlet::wire {

std::optional<at::ScalarType> to_scalar_type(DType d) {
  switch (d) {
    case DType::Float32: return at::kFloat;
    case DType::Float16: return at::kHalf;
    case DType::BFloat16: return at::kBFloat16;
    case DType::Float64: return at::kDouble;
    case DType::Int64: return at::kLong;
    case DType::Int32: return at::kInt;
    case DType::Bool: return at::kBool;
    case DType::Int8: return at::kChar;
    case DType::UInt8: return at::kByte;
    case DType::Float8E4M3:
#if GAUNTLET_TORCH_HAS_FLOAT8
      return at::ScalarType::Float8_e4m3fn;
#else
      return std::nullopt;
#endif
  }
  return std::nullopt;
}

std::string dtype_unavailable(DType d) {
  if (to_scalar_type(d)) return "";
  return std::string("this gauntlet's LibTorch ") + TORCH_VERSION + " has no " + dtype_name(d) +
         (d == DType::Float8E4M3 ? " (PyTorch 2.1 and later have it)" : "");
}

bool none_available(const std::vector<DType>& dtypes) {
  return !dtypes.empty() &&
         std::none_of(dtypes.begin(), dtypes.end(), [](DType d) { return dtype_unavailable(d).empty(); });
}

at::Tensor nan_testable(const at::Tensor& t) {
  // ATen implements isnan/isinf for no float8 dtype (measured on 2.11: "isinf" not implemented for
  // 'Float8_e4m3fn'); every other floating dtype is at least two bytes wide.
  return t.is_floating_point() && t.element_size() < 2 ? t.to(at::kFloat) : t;
}

std::optional<DType> from_scalar_type(at::ScalarType s) {
  switch (s) {
    case at::kFloat: return DType::Float32;
    case at::kHalf: return DType::Float16;
    case at::kBFloat16: return DType::BFloat16;
    case at::kDouble: return DType::Float64;
    case at::kLong: return DType::Int64;
    case at::kInt: return DType::Int32;
    case at::kBool: return DType::Bool;
    case at::kChar: return DType::Int8;
    case at::kByte: return DType::UInt8;
#if GAUNTLET_TORCH_HAS_FLOAT8
    case at::ScalarType::Float8_e4m3fn: return DType::Float8E4M3;
#endif
    default: return std::nullopt;
  }
}

}  // namespace gauntlet::wire
