// Known wrong-output patterns named: when a kernel's wrong output is exactly what a familiar bug
// gives (fmaxf dropping NaN, flush-to-zero, GELU's tanh form, softmax without its max, a view read
// as contiguous storage, a sum or dot product accumulated in the 16-bit input dtype), the failure
// says so instead of only "error 2e-4 > allowed".
#pragma once
#include <ATen/ATen.h>

#include <optional>
#include <string>
#include <vector>

#include "gauntlet/cases/case.h"
#include "gauntlet/schema/schema.h"

namespace gauntlet {

struct Diagnosis {
  std::string name;  // stable id: nan-dropped, flush-to-zero, subnormal-inputs-as-zero, gelu-tanh,
                     // softmax-without-max, contiguous-read, half-accumulation
  std::string text;  // one line for people: what matched, with an example element
};

// The first known pattern that explains the kernel's outputs `got` for the case's `inputs`,
// against the oracle's float64 `expected`; nullopt when none does. A pattern explains an output
// only when it reproduces every element the kernel returned (within a few ulps of the output
// dtype) and differs from the exact result somewhere, so a correct kernel never matches one and a
// kernel wrong in some other way is left undiagnosed rather than misnamed.
std::optional<Diagnosis> diagnose_wrong_output(const OpSchema& schema, const Case& c,
                                               const std::vector<at::Tensor>& inputs,
                                               const std::vector<at::Tensor>& got,
                                               const std::vector<at::Tensor>& expected);

}  // namespace gauntlet
