// fp64 gradient reference for the gradients gate: the oracle's Jacobian (autograd, else finite differences).
#pragma once
#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "gauntlet/schema/schema.h"
#include "gauntlet/common/types.h"

namespace gauntlet {

// The reference gradient of every oracle input for one output gradient g, from the oracle's
// fp64 Jacobian J (rows: output elements in order, all outputs concatenated; columns: one input's
// elements). Per input, in the schema's order (undefined for non-floating inputs such as indices):
struct GradientReference {
  std::vector<at::Tensor> grads;   // float64, the input's shape: J^T g
  // float64: |J|^T |g| (the backward analogue of sum|terms|) + sensitivity
  std::vector<at::Tensor> scales;
  // float64: sum_m |d(J^T g)_i / dx_m| |x_m|, how far relative input perturbations of size 1 move
  // the gradient to first order (a float backward recomputes the forward's mean, rstd or
  // denominator, with relative errors ~u in their terms); times u_acc in the tolerance
  std::vector<at::Tensor> sensitivity;
  std::vector<at::Tensor> terms;   // int64: how many products J_oi * g_o are nonzero (K per element)
  std::string method;              // "autograd" or "finite differences (why)"
  std::string error;               // non-empty: no reference (the oracle refused, too large, ...)
  bool ok() const { return error.empty(); }
};

struct GradientOptions {
  bool force_finite_differences = false;  // tests compare both methods
  int64_t max_jacobian_entries = int64_t(1) << 22;  // outputs x inputs; beyond it the case is refused
};

// `inputs` in the schema's order, any dtype (cast to float64 exactly); `grad_outputs` one per
// oracle output, the output's shape. Never throws: failures come back in `error`.
GradientReference gradient_reference(const std::string& oracle_id, const std::vector<at::Tensor>& inputs,
                                     const AttrMap& attrs, const std::vector<at::Tensor>& grad_outputs,
                                     const GradientOptions& options = {});

// The tolerance a backward is judged under, derived from the forward's tolerance for the dtype:
// always the reduction form (a gradient element is a sum of |J_oi g_o| terms even for an
// elementwise op, whose backward multiplies g by a derivative rounded on its own), see
// docs/tolerances.md.
Tolerance gradient_tolerance(const Tolerance& forward);

}  // namespace gauntlet
