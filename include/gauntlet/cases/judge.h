// Judging one kernel output against the fp64 oracle under a schema tolerance.
#pragma once
#include <ATen/ATen.h>

#include <string>

#include "gauntlet/schema/schema.h"
#include "gauntlet/common/types.h"

namespace gauntlet {

struct JudgeOptions {
  // Differences where both the kernel's value and the rounded reference lie below the dtype's
  // smallest normal are left to the subnormals gate (flush-to-zero parity is its property).
  bool defer_subnormal_range = true;
};

struct Judgement {
  bool pass = true;
  bool vacuous = false;        // the reference is constant or all zero: not evidence
  int64_t checked = 0;
  int64_t bad = 0;             // elements out of tolerance (NaN/Inf mismatches included)
  int64_t nonfinite_mismatch = 0;
  int64_t unjudged = 0;        // module-envelope: elements the oracle leaves unjudged (infinite scale)
  int64_t worst_index = -1;    // flat index of the worst element
  double got = 0, expected = 0, error = 0, allowed = 0;
  std::string message;         // one line of evidence when !pass
};

// `out`: the kernel's output (any dtype; compared as the dtype `dtype`); `ref`: the oracle's
// float64 output; `scale`: the oracle's magnitude tensor (may be undefined); `K`: terms per element.
Judgement judge_output(const std::string& output_name, const at::Tensor& out, const at::Tensor& ref,
                       const at::Tensor& scale, DType dtype, const Tolerance& tol, int64_t K,
                       const JudgeOptions& options = {});

// The tolerance mode's allowed error at one element (exposed for tests and reports).
double allowed_error(DType dtype, const Tolerance& tol, double ref, double scale, int64_t K);

// "[3,17]" for a flat index into `sizes`.
std::string index_text(at::IntArrayRef sizes, int64_t flat);

}  // namespace gauntlet
