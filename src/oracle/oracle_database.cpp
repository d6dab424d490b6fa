// fp64 oracles of the database-style ops (SPEC "next ops"): filter, sort, unique, topk, grouped sums, scatter_add, hash_join.
#include <cmath>
#include <map>
#include <numeric>

#include "oracle_internal.h"

namespace gauntlet::oracle_impl {
namespace {

// A 1-D input of `n` float64 or int64 values as a plain vector (the loops below are the definition).
std::vector<double> doubles(const at::Tensor& t) {
  const double* p = t.data_ptr<double>();
  return std::vector<double>(p, p + t.numel());
}

std::vector<int64_t> longs(const at::Tensor& t) {
  const int64_t* p = t.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + t.numel());
}

at::Tensor tensor_of(const std::vector<double>& v, std::vector<int64_t> shape) {
  return at::tensor(at::ArrayRef<double>(v), at::kDouble).reshape(shape).clone();
}

at::Tensor tensor_of(const std::vector<int64_t>& v, std::vector<int64_t> shape) {
  return at::tensor(at::ArrayRef<int64_t>(v), at::kLong).reshape(shape).clone();
}

// Sorting's order of floats as torch's: ascending, NaN after everything (every NaN equal), and
// -0.0 equal to +0.0 (a stable sort keeps their input order).
bool before(double a, double b) {
  if (std::isnan(a)) return false;
  if (std::isnan(b)) return true;
  return a < b;
}

// Each output element out[g] = sum of x[i] over the i with group[i] == g, in index order, and
// its scale sum |x[i]| (the textbook bound of that many-term float sum); an empty group gives 0.
// Every group index is checked first; one index_add then sums (on the CPU, serially), which keeps
// the result in the autograd graph for the gradients gate's reference (d out[g] / d x[i] = 1).
OracleResult grouped_sum(const at::Tensor& x, const at::Tensor& group, int64_t groups, const char* index_name) {
  const std::vector<int64_t> g = longs(group);
  for (size_t i = 0; i < g.size(); ++i)
    if (g[i] < 0 || g[i] >= groups)
      fail(std::string(index_name) + "[" + std::to_string(i) + "] = " + std::to_string(g[i]) + " is outside [0, " +
           std::to_string(groups) + ")");
  const at::Tensor zeros = at::zeros({groups}, x.options());
  const at::Tensor index = tensor_of(g, {int64_t(g.size())});
  return make_result(zeros.index_add(0, index, x), zeros.index_add(0, index, x.abs()));
}

}  // namespace

OracleResult filter(const Inputs& in, const AttrMap& attrs) {
  expect_count(in, 1);
  const at::Tensor x = value_input(in, 0, "x");
  expect_rank(x, "x", 1);
  const double threshold = attr_double(attrs, "threshold");
  std::vector<int64_t> kept;
  const std::vector<double> v = doubles(x);
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] > threshold) kept.push_back(int64_t(i));  // NaN > t is false: NaN is dropped, as x[x > t] drops it
  // Gathered from x itself, so autograd sees the copy (the gradient reference).
  return make_result(x.index_select(0, tensor_of(kept, {int64_t(kept.size())})));
}

OracleResult sort(const Inputs& in, const AttrMap&) {
  expect_count(in, 2);
  const at::Tensor keys = value_input(in, 0, "keys");
  const at::Tensor values = index_input(in, 1, "values");
  expect_rank(keys, "keys", 1);
  expect_rank(values, "values", 1);
  if (values.numel() != keys.numel()) fail("values must have as many elements as keys (" + shape_str(keys) + ")");
  const std::vector<double> k = doubles(keys);
  std::vector<int64_t> order(k.size());
  std::iota(order.begin(), order.end(), int64_t(0));
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return before(k[size_t(a)], k[size_t(b)]); });
  // Keys and values gathered by the stable order (autograd sees the keys' permutation).
  const at::Tensor by = tensor_of(order, {int64_t(order.size())});
  OracleResult r = make_result(keys.index_select(0, by));
  r.outputs.push_back(values.index_select(0, by).contiguous());
  r.scales.push_back(at::Tensor());
  return r;
}

OracleResult unique(const Inputs& in, const AttrMap&) {
  expect_count(in, 1);
  const at::Tensor x = index_input(in, 0, "x");
  expect_rank(x, "x", 1);
  std::map<int64_t, int64_t> counts;
  for (int64_t v : longs(x)) ++counts[v];
  std::vector<int64_t> values, n;
  for (const auto& [v, c] : counts) values.push_back(v), n.push_back(c);
  OracleResult r = make_result(tensor_of(values, {int64_t(values.size())}));
  r.outputs.push_back(tensor_of(n, {int64_t(n.size())}));
  r.scales.push_back(at::Tensor());
  return r;
}

OracleResult topk(const Inputs& in, const AttrMap& attrs) {
  expect_count(in, 1);
  const at::Tensor x = value_input(in, 0, "x");
  expect_rank(x, "x", 2);
  const int64_t k = attr_int(attrs, "k"), rows = x.size(0), n = x.size(1);
  if (k < 0 || k > n) fail("k = " + std::to_string(k) + " is outside [0, " + std::to_string(n) + "]");
  const std::vector<double> all = doubles(x);
  std::vector<int64_t> indices;
  for (int64_t b = 0; b < rows; ++b) {
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), int64_t(0));
    // Largest first, NaN largest of all (torch.topk); among equal values the lower index first, one
    // of the orders the schema's tie freedom allows.
    const double* row = all.data() + b * n;
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t c) { return before(row[c], row[a]); });
    for (int64_t j = 0; j < k; ++j) indices.push_back(order[size_t(j)]);
  }
  // The values gathered from x (not rebuilt from doubles), so they stay in the autograd graph: the
  // gradients gate's reference sends each output gradient back to the element it came from.
  const at::Tensor index = tensor_of(indices, {rows, k});
  OracleResult r = make_result(x.gather(1, index));
  r.outputs.push_back(index);
  r.scales.push_back(at::Tensor());
  return r;
}

OracleResult segment_sum(const Inputs& in, const AttrMap&) {
  expect_count(in, 2);
  const at::Tensor x = value_input(in, 0, "x");
  const at::Tensor offsets = index_input(in, 1, "offsets");
  expect_rank(x, "x", 2);
  expect_rank(offsets, "offsets", 1);
  const int64_t n = x.size(0), d = x.size(1), segments = offsets.numel() - 1;
  if (segments < 0) fail("offsets must hold at least one element (S + 1 for S segments)");
  const std::vector<int64_t> o = longs(offsets);
  if (o.front() != 0 || o.back() != n) fail("offsets must run from 0 to size(x, 0) = " + std::to_string(n));
  for (int64_t s = 0; s < segments; ++s)
    if (o[size_t(s + 1)] < o[size_t(s)]) fail("offsets must not decrease (at " + std::to_string(s + 1) + ")");
  // The segment of every row; one index_add then sums each segment's rows in row order (on the
  // CPU, serially). Unlike a loop over doubles it stays in the autograd graph, so the gradients
  // gate's reference differentiates it (d out[s] / d x[i] = 1 for the rows i of segment s).
  std::vector<int64_t> segment_of(size_t(n), 0);
  for (int64_t s = 0; s < segments; ++s)
    for (int64_t i = o[size_t(s)]; i < o[size_t(s + 1)]; ++i) segment_of[size_t(i)] = s;
  const at::Tensor rows = tensor_of(segment_of, {n});
  const at::Tensor zeros = at::zeros({segments, d}, x.options());
  // Scale sum|x| over the segment (an empty segment: 0, and its output must be exactly 0).
  return make_result(zeros.index_add(0, rows, x), zeros.index_add(0, rows, x.abs()));
}

OracleResult group_by_sum(const Inputs& in, const AttrMap& attrs) {
  expect_count(in, 2);
  const at::Tensor keys = index_input(in, 0, "keys");
  const at::Tensor values = value_input(in, 1, "values");
  expect_rank(keys, "keys", 1);
  expect_rank(values, "values", 1);
  if (values.numel() != keys.numel()) fail("values must have as many elements as keys (" + shape_str(keys) + ")");
  const int64_t groups = attr_int(attrs, "num_groups");
  if (groups < 0) fail("num_groups must not be negative");
  return grouped_sum(values, keys, groups, "keys");
}

OracleResult scatter_add(const Inputs& in, const AttrMap& attrs) {
  expect_count(in, 2);
  const at::Tensor x = value_input(in, 0, "x");
  const at::Tensor index = index_input(in, 1, "index");
  expect_rank(x, "x", 1);
  expect_rank(index, "index", 1);
  if (index.numel() != x.numel()) fail("index must have as many elements as x (" + shape_str(x) + ")");
  const int64_t size = attr_int(attrs, "size");
  if (size < 0) fail("size must not be negative");
  return grouped_sum(x, index, size, "index");
}

OracleResult hash_join(const Inputs& in, const AttrMap&) {
  expect_count(in, 2);
  const at::Tensor left = index_input(in, 0, "left");
  const at::Tensor right = index_input(in, 1, "right");
  expect_rank(left, "left", 1);
  expect_rank(right, "right", 1);
  const std::vector<int64_t> l = longs(left), r = longs(right);
  std::map<int64_t, std::vector<int64_t>> rows_of;  // key -> the right rows holding it, ascending
  for (size_t j = 0; j < r.size(); ++j) rows_of[r[j]].push_back(int64_t(j));
  std::vector<int64_t> pairs;
  for (size_t i = 0; i < l.size(); ++i) {  // (i, j) ascending: the order the SPEC fixes
    const auto it = rows_of.find(l[i]);
    if (it == rows_of.end()) continue;
    for (int64_t j : it->second) pairs.push_back(int64_t(i)), pairs.push_back(j);
  }
  return make_result(tensor_of(pairs, {int64_t(pairs.size() / 2), 2}));
}

}  // namespace gauntlet::oracle_impl
