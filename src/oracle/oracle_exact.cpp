// Exact oracles of the sum-like ops (sum, mean, cumsum, segment_sum, group_by_sum, scatter_add, matmul, bmm, linear_relu): exact sums, rounded once.
#include <c10/util/Exception.h>

#include <cmath>

#include "gauntlet/oracle/superacc.h"
#include "oracle_internal.h"

namespace gauntlet {
namespace {

using oracle_impl::fail;

// [outer, K, inner] around the reduced dim of a contiguous tensor.
struct Split {
  int64_t outer = 1, K = 1, inner = 1;
};

Split split_at(const at::Tensor& x, int64_t d) {
  Split s;
  for (int64_t i = 0; i < d; ++i) s.outer *= x.size(i);
  s.K = x.size(d);
  for (int64_t i = d + 1; i < x.dim(); ++i) s.inner *= x.size(i);
  return s;
}

// x as float64 (exact: every float dtype widens exactly), rank >= 1, and the wrapped dim.
std::pair<at::Tensor, int64_t> dim_input(const std::vector<at::Tensor>& in, const AttrMap& attrs) {
  oracle_impl::expect_count(in, 1);
  at::Tensor x = oracle_impl::value_input(in, 0, "x");
  const int64_t dim = oracle_impl::wrap_dim(oracle_impl::attr_int(attrs, "dim"), x.dim());
  if (x.dim() == 0) x = x.reshape({1});
  return {x, dim};
}

enum class Reduce { Sum, Mean, Cumsum };

at::Tensor reduce(const std::vector<at::Tensor>& in, const AttrMap& attrs, DType out, Reduce mode) {
  auto [x, dim] = dim_input(in, attrs);
  const Split sp = split_at(x, dim);
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
  if (mode != Reduce::Cumsum) shape.erase(shape.begin() + dim);
  at::Tensor y = at::empty(shape, x.options());
  const double* p = x.data_ptr<double>();
  double* o = y.data_ptr<double>();
  for (int64_t a = 0; a < sp.outer; ++a)
    for (int64_t b = 0; b < sp.inner; ++b) {
      SuperAccumulator acc;
      for (int64_t k = 0; k < sp.K; ++k) {
        acc.add(p[(a * sp.K + k) * sp.inner + b]);
        if (mode == Reduce::Cumsum) o[(a * sp.K + k) * sp.inner + b] = acc.round_to(out);
      }
      if (mode == Reduce::Sum) o[a * sp.inner + b] = acc.round_to(out);
      // The exact quotient, rounded once (K = 0: NaN, as torch.mean of an empty dim).
      if (mode == Reduce::Mean) o[a * sp.inner + b] = acc.round_quotient(out, uint64_t(sp.K));
    }
  return in[0].dim() == 0 ? y.reshape({}) : y;
}

// Each segment's rows summed exactly, column by column, and rounded once (an empty segment: 0).
// The fp64 oracle runs first: it refuses offsets that are not monotone from 0 to N (so the loop
// below never reads past x), and its sum|x| is the scale.
at::Tensor segments(const std::vector<at::Tensor>& in, const AttrMap& attrs, DType out, at::Tensor* scale) {
  const OracleResult checked = oracle_impl::segment_sum(in, attrs);
  *scale = checked.scales.at(0);
  const at::Tensor x = oracle_impl::value_input(in, 0, "x");
  const at::Tensor offsets = oracle_impl::index_input(in, 1, "offsets");
  const int64_t S = offsets.numel() - 1, D = x.size(1);
  const int64_t* o = offsets.data_ptr<int64_t>();
  const double* p = x.data_ptr<double>();
  at::Tensor y = at::empty({S, D}, x.options());
  double* q = y.data_ptr<double>();
  for (int64_t s = 0; s < S; ++s)
    for (int64_t j = 0; j < D; ++j) {
      SuperAccumulator acc;
      for (int64_t i = o[s]; i < o[s + 1]; ++i) acc.add(p[i * D + j]);
      q[s * D + j] = acc.round_to(out);
    }
  return y;
}

// Each group's (bucket's) terms summed exactly and rounded once (an empty group: 0): group_by_sum
// (keys, values) and scatter_add (x, index). The fp64 oracle runs first: it refuses keys outside
// [0, groups) (so the accumulators below are never indexed past the end), and gives the scale.
at::Tensor groups(const std::string& op, const std::vector<at::Tensor>& in, const AttrMap& attrs, DType out,
                  at::Tensor* scale) {
  const bool keys_first = op == "group_by_sum";
  const OracleResult checked = keys_first ? oracle_impl::group_by_sum(in, attrs) : oracle_impl::scatter_add(in, attrs);
  *scale = checked.scales.at(0);
  const at::Tensor v = oracle_impl::value_input(in, keys_first ? 1 : 0, keys_first ? "values" : "x");
  const at::Tensor k = oracle_impl::index_input(in, keys_first ? 0 : 1, keys_first ? "keys" : "index");
  const int64_t G = checked.outputs.at(0).numel(), n = v.numel();
  const double* p = v.data_ptr<double>();
  const int64_t* key = k.data_ptr<int64_t>();
  std::vector<SuperAccumulator> acc(static_cast<size_t>(G));
  for (int64_t i = 0; i < n; ++i) acc[static_cast<size_t>(key[i])].add(p[i]);
  at::Tensor y = at::empty({G}, v.options());
  double* q = y.data_ptr<double>();
  for (int64_t g = 0; g < G; ++g) q[g] = acc[static_cast<size_t>(g)].round_to(out);
  return y;
}

void expect_size(const at::Tensor& t, const char* name, int64_t d, int64_t want) {
  if (t.size(d) != want)
    fail(std::string(name) + ": size " + std::to_string(t.size(d)) + " at dim " + std::to_string(d) + ", expected " +
         std::to_string(want));
}

// The exact outputs; `scale` gets the dot-product ops' |a|@|w| (left undefined for the others).
at::Tensor exact(const std::string& op, const std::vector<at::Tensor>& in, const AttrMap& attrs, DType out,
                 ExactPath path, ExactOracleStats* stats, at::Tensor* scale) {
  namespace o = oracle_impl;
  if (op == "sum") return reduce(in, attrs, out, Reduce::Sum);
  if (op == "mean") return reduce(in, attrs, out, Reduce::Mean);
  if (op == "cumsum") return reduce(in, attrs, out, Reduce::Cumsum);
  if (op == "segment_sum") return segments(in, attrs, out, scale);
  if (op == "group_by_sum" || op == "scatter_add") return groups(op, in, attrs, out, scale);
  if (op == "matmul" || op == "bmm") {
    o::expect_count(in, 2);
    const at::Tensor a = o::value_input(in, 0, "a"), b = o::value_input(in, 1, "b");
    const int64_t rank = op == "bmm" ? 3 : 2;
    o::expect_rank(a, "a", rank);
    o::expect_rank(b, "b", rank);
    expect_size(b, "b", rank - 2, a.size(rank - 1));
    if (rank == 3) expect_size(b, "b", 0, a.size(0));
    at::Tensor y = o::exact_gemm(rank == 3 ? a : a.unsqueeze(0), rank == 3 ? b : b.unsqueeze(0), at::Tensor(), true,
                                 false, out, path, stats, scale);
    if (rank == 2) *scale = scale->squeeze(0);
    return rank == 3 ? y : y.squeeze(0);
  }
  if (op == "linear_relu") {
    o::expect_count(in, 3);
    const at::Tensor x = o::value_input(in, 0, "x"), w = o::value_input(in, 1, "w"), b = o::value_input(in, 2, "b");
    o::expect_rank(x, "x", 2);
    o::expect_rank(w, "w", 2);
    o::expect_rank(b, "b", 1);
    expect_size(w, "w", 1, x.size(1));
    expect_size(b, "b", 0, w.size(0));
    at::Tensor y = o::exact_gemm(x.unsqueeze(0), w.unsqueeze(0), b, false, true, out, path, stats, scale);
    *scale = scale->squeeze(0);
    return y.squeeze(0);
  }
  fail("no exact oracle for " + op);
}

}  // namespace

bool has_exact_oracle(const std::string& id) {
  return id == "sum" || id == "mean" || id == "cumsum" || id == "segment_sum" || id == "group_by_sum" ||
         id == "scatter_add" || id == "matmul" || id == "bmm" || id == "linear_relu";
}

OracleResult run_exact_oracle(const std::string& id, const std::vector<at::Tensor>& inputs, const AttrMap& attrs,
                              DType out_dtype, bool* supported) {
  return run_exact_oracle(id, inputs, attrs, out_dtype, supported, ExactPath::Filtered, nullptr);
}

OracleResult run_exact_oracle(const std::string& id, const std::vector<at::Tensor>& inputs, const AttrMap& attrs,
                              DType out_dtype, bool* supported, ExactPath path, ExactOracleStats* stats) {
  OracleResult r;
  *supported = has_exact_oracle(id);
  if (!*supported) return r;
  try {
    at::Tensor scale;
    r.outputs.push_back(exact(id, inputs, attrs, out_dtype, path, stats, &scale).contiguous());
    if (scale.defined()) {
      r.scales.push_back(scale.contiguous());
    } else {
      // The reductions' magnitudes (scales) come from the fp64 oracle: they only size the tolerance.
      OracleResult fp64 = run_oracle(id, inputs, attrs);
      if (!fp64.ok()) return fp64;
      r.scales = fp64.scales;
    }
  } catch (const oracle_impl::OracleFailure& e) {
    r.error = "exact " + id + ": " + e.what();
  } catch (const c10::Error& e) {
    r.error = "exact " + id + ": " + e.what_without_backtrace();
  } catch (const std::exception& e) {
    r.error = "exact " + id + ": " + e.what();
  }
  return r;
}

}  // namespace gauntlet
