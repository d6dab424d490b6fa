// Matching a kernel's outputs to the oracle's where the schema leaves a freedom (OutputSpec::equivalence).
#pragma once
#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "gauntlet/common/types.h"
#include "gauntlet/schema/schema.h"

namespace gauntlet {

// The kernel's outputs put in the oracle's order where the schema allows another order, so the
// tolerance can then be applied position by position (judge.h); or where they cannot be matched,
// which output and row differ. Rows are slices along dim 0 (a 1-D output's elements).
//
//   set                rows as a set: every oracle row once among the kernel's, no other row
//                      (a repeated row is a row too many: unique's values are unique)
//   multiset           rows as a multiset: the same rows, each as many times
//   permutation_of_ties  the output indexes the last dim of the op's first input (topk, sort): each
//                      kernel index, row by row, is in range, used once, and points at an element
//                      equal to the tie_key output's value at its position in the oracle's answer;
//                      then the oracle's index is taken (any index of a tied element is right,
//                      including one past the k-th that ties with it)
//   aligned_with       rows follow the row matching of the named set/multiset output (group-by
//                      sums follow their keys), then are judged under the tolerance
//   strict_when        a bool attribute that, when true, makes the output elementwise
//
// Rows match by exact value (NaN equal to NaN, -0 equal to +0): set and multiset outputs are keys,
// indices and copied values. Outputs of another extent than the oracle's are left as they are (the
// contract check reports the count).
struct OutputMatch {
  bool ok = true;
  std::string message;              // !ok: the output, the row, what differs
  std::vector<at::Tensor> outputs;  // the kernel's outputs, matched rows in the oracle's order
};

OutputMatch match_outputs(const OpSchema& schema, const AttrMap& attrs, const std::vector<at::Tensor>& inputs,
                          const std::vector<at::Tensor>& kernel, const std::vector<at::Tensor>& oracle);

// Whether any output of the schema needs matching (an elementwise-only op skips match_outputs).
bool has_output_freedom(const OpSchema& schema);

}  // namespace gauntlet
