// The special-values gate's strong zeros: a reference that spreads NaN only through exact zeros is judged with 0 x NaN = 0.
#pragma once
#include <optional>
#include <vector>

#include "gauntlet/cases/gate.h"
#include "gauntlet/oracle/oracle.h"

// Exposed for tests/gates/special_values_test.cpp, which declares them as they are here.
namespace gauntlet::special_values {

// The case's inputs with every NaN at `nan_value` and every infinity at +-`inf_magnitude`.
std::vector<at::Tensor> with_nonfinite_replaced(const std::vector<at::Tensor>& inputs, double nan_value,
                                                double inf_magnitude, bool to_double);

// The reference with strong zeros where the kernel's output is not NaN and the reference's is;
// `accepted`: the elements changed.
at::Tensor strong_zero_reference(const at::Tensor& ref, const at::Tensor& got, const at::Tensor& small,
                                 const at::Tensor& nan_large, const at::Tensor& huge1, const at::Tensor& huge2,
                                 const at::Tensor& flipped, at::Tensor* accepted);

// The four probes of strong_zero_reference, or nothing when the oracle rejects one.
struct StrongZeroProbes {
  OracleResult small, nan_large, huge1, huge2;
  OracleResult flipped;  // huge1 with every infinity's sign changed
};
std::optional<StrongZeroProbes> strong_zero_probes(GateContext& ctx, const CaseRun& run);

}  // namespace gauntlet::special_values
