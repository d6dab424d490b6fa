// Private to the oracle files: input/attribute checking helpers shared by the op families.
#pragma once
#include <ATen/ATen.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "gauntlet/oracle.h"
#include "gauntlet/types.h"

namespace gauntlet::oracle_impl {

using Inputs = std::vector<at::Tensor>;
using OracleFn = OracleResult (*)(const Inputs&, const AttrMap&);

// Thrown for inputs the oracle refuses; run_oracle turns it into OracleResult::error.
struct OracleFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};
[[noreturn]] void fail(const std::string& why);

std::string shape_str(const at::Tensor& t);
void expect_count(const Inputs& in, size_t n);
// Casts happen here, before any ATen arithmetic: LibTorch 1.13 computes bf16 matmul in bf16.
at::Tensor value_input(const Inputs& in, size_t i, const char* name);  // -> CPU float64, contiguous
at::Tensor index_input(const Inputs& in, size_t i, const char* name);  // -> CPU int64, contiguous
void expect_rank(const at::Tensor& t, const char* name, int64_t rank);
void expect_min_rank(const at::Tensor& t, const char* name, int64_t rank);

int64_t attr_int(const AttrMap& attrs, const char* name);
double attr_double(const AttrMap& attrs, const char* name);
bool attr_bool(const AttrMap& attrs, const char* name);

// PyTorch's dim wrapping: a 0-d tensor accepts dim 0 or -1 as if it were 1-d.
int64_t wrap_dim(int64_t dim, int64_t rank);

OracleResult make_result(const at::Tensor& out, const at::Tensor& scale = at::Tensor());

// Shared numerics (oracle_reductions.cpp); x has rank >= 1 and a non-empty `dim`.
at::Tensor amax_nan(const at::Tensor& x, int64_t dim, bool keepdim);
at::Tensor logsumexp_nan(const at::Tensor& x, int64_t dim, bool keepdim);
at::Tensor softmax_nan(const at::Tensor& x, int64_t dim);

// Op entry points, one per oracle id.
OracleResult relu(const Inputs&, const AttrMap&);
OracleResult gelu(const Inputs&, const AttrMap&);
OracleResult sigmoid(const Inputs&, const AttrMap&);
OracleResult add(const Inputs&, const AttrMap&);
OracleResult clamp(const Inputs&, const AttrMap&);

OracleResult sum(const Inputs&, const AttrMap&);
OracleResult mean(const Inputs&, const AttrMap&);
OracleResult amax(const Inputs&, const AttrMap&);
OracleResult logsumexp(const Inputs&, const AttrMap&);
OracleResult softmax(const Inputs&, const AttrMap&);
OracleResult log_softmax(const Inputs&, const AttrMap&);
OracleResult cumsum(const Inputs&, const AttrMap&);

OracleResult layer_norm(const Inputs&, const AttrMap&);
OracleResult rms_norm(const Inputs&, const AttrMap&);
OracleResult matmul(const Inputs&, const AttrMap&);
OracleResult linear_relu(const Inputs&, const AttrMap&);
OracleResult bmm(const Inputs&, const AttrMap&);
OracleResult conv2d(const Inputs&, const AttrMap&);
OracleResult sdpa(const Inputs&, const AttrMap&);
OracleResult embedding(const Inputs&, const AttrMap&);
OracleResult cross_entropy(const Inputs&, const AttrMap&);

}  // namespace gauntlet::oracle_impl
