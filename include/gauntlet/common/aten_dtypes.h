// gauntlet's dtypes as ATen's scalar types, and what this LibTorch lacks (float8 before PyTorch 2.1).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "gauntlet/common/types.h"

// In namespace wire, where the tensors crossing the sandbox are made from these (wire.h includes this).
namespace gauntlet::wire {

// nullopt for a dtype this LibTorch lacks (float8_e4m3fn before 2.1: dtype_unavailable).
std::optional<at::ScalarType> to_scalar_type(DType d);
std::optional<DType> from_scalar_type(at::ScalarType s);
// Why tensors of `d` cannot be made with the LibTorch gauntlet was built with ("" when they can):
// "this gauntlet's LibTorch 1.13.0 has no float8_e4m3fn (PyTorch 2.1 and later have it)".
std::string dtype_unavailable(DType d);
// True when `dtypes` names at least one dtype and this LibTorch has none of them: an input, op or
// planted bug that cannot be made here (fp8_matmul's float8_e4m3fn before PyTorch 2.1).
bool none_available(const std::vector<DType>& dtypes);
// `t` where ATen can test it for NaN and inf (isnan, isinf, where): float8 widened to float32, which
// holds every float8 value; any other tensor as it is.
at::Tensor nan_testable(const at::Tensor& t);

}  // namespace gauntlet::wire
