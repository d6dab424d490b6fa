// Matching a kernel's outputs to the oracle's under the schema's equivalences (output_matching.h).
#include "gauntlet/cases/output_matching.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

namespace gauntlet {
namespace {

// A row's values as doubles, with NaN and -0 canonical so that equal rows compare equal.
using RowKey = std::vector<double>;

RowKey canonical(const double* p, int64_t n) {
  RowKey k(p, p + n);
  for (double& v : k) {
    if (std::isnan(v)) v = std::numeric_limits<double>::quiet_NaN();
    if (v == 0) v = 0.0;
  }
  return k;
}

// Totally ordered (NaN after everything), for sorting row keys.
bool key_less(const RowKey& a, const RowKey& b) {
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const bool an = std::isnan(a[i]), bn = std::isnan(b[i]);
    if (an != bn) return bn;
    if (!an && a[i] != b[i]) return a[i] < b[i];
  }
  return a.size() < b.size();
}

bool key_equal(const RowKey& a, const RowKey& b) { return !key_less(a, b) && !key_less(b, a); }

std::vector<RowKey> rows_of(const at::Tensor& t) {
  const at::Tensor d = t.to(at::kDouble).contiguous();
  const int64_t n = d.dim() == 0 ? 1 : d.size(0);
  const int64_t width = n == 0 ? 0 : d.numel() / n;
  std::vector<RowKey> rows;
  for (int64_t r = 0; r < n; ++r) rows.push_back(canonical(d.data_ptr<double>() + r * width, width));
  return rows;
}

std::string row_text(const RowKey& k) {
  std::string s = k.size() == 1 ? "" : "(";
  for (size_t i = 0; i < k.size(); ++i) {
    if (i) s += ", ";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", k[i]);
    s += buf;
  }
  return k.size() == 1 ? s : s + ")";
}

int output_index(const OpSchema& schema, const std::string& name) {
  for (size_t i = 0; i < schema.outputs.size(); ++i)
    if (schema.outputs[i].name == name) return int(i);
  return -1;
}

bool strict(const OutputSpec& o, const AttrMap& attrs) {
  if (o.strict_when.empty()) return false;
  auto it = attrs.find(o.strict_when);
  return it != attrs.end() && std::holds_alternative<bool>(it->second) && std::get<bool>(it->second);
}

// For set/multiset: which kernel row goes to each oracle row (kernel_row_of[i]), or why none can.
bool match_rows(const std::string& name, bool as_set, const at::Tensor& kernel, const at::Tensor& oracle,
                std::vector<int64_t>* kernel_row_of, std::string* why) {
  const std::vector<RowKey> k = rows_of(kernel), o = rows_of(oracle);
  std::multimap<RowKey, int64_t, bool (*)(const RowKey&, const RowKey&)> unused(key_less);
  for (size_t r = 0; r < k.size(); ++r) unused.emplace(k[r], int64_t(r));
  kernel_row_of->assign(o.size(), -1);
  for (size_t r = 0; r < o.size(); ++r) {
    auto it = unused.find(o[r]);
    if (it == unused.end()) {
      *why = name + ": the oracle's row " + row_text(o[r]) + " is missing from the kernel's " +
             (as_set ? "set" : "multiset") + (as_set ? "" : " (or appears fewer times)");
      return false;
    }
    (*kernel_row_of)[r] = it->second;
    unused.erase(it);
  }
  if (!unused.empty()) {
    *why = name + ": the kernel's row " + row_text(unused.begin()->first) + " is not in the oracle's " +
           (as_set ? "set (a repeated row counts: the set's rows are distinct)" : "multiset");
    return false;
  }
  return true;
}

// permutation_of_ties: the kernel's indices are valid where each points, within its row of the
// first input's last dim, at an element equal to the tie key's value at that position, once.
bool valid_tied_indices(const std::string& name, const at::Tensor& indices, const at::Tensor& tie_values,
                        const at::Tensor& input, std::string* why) {
  if (!input.defined() || input.dim() == 0 || indices.sizes() != tie_values.sizes() || indices.dim() == 0) {
    *why = name + ": cannot check tied indices (shapes " + std::to_string(indices.dim()) + "-D against the input)";
    return false;
  }
  const int64_t width = input.size(-1), k = indices.size(-1), rows = k == 0 ? 0 : indices.numel() / k;
  if (rows > 0 && input.numel() / std::max<int64_t>(width, 1) != rows) {
    *why = name + ": " + std::to_string(rows) + " rows of indices for " + std::to_string(input.numel() / std::max<int64_t>(width, 1)) +
           " rows of input";
    return false;
  }
  const at::Tensor idx = indices.to(at::kLong).contiguous(), key = tie_values.to(at::kDouble).contiguous(),
                   x = input.to(at::kDouble).contiguous();
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<bool> used(size_t(width), false);
    for (int64_t p = 0; p < k; ++p) {
      const int64_t i = idx.data_ptr<int64_t>()[r * k + p];
      const std::string where = name + " at " + std::to_string(r * k + p);
      if (i < 0 || i >= width) return (*why = where + " is " + std::to_string(i) + ", outside [0, " + std::to_string(width) + ")", false);
      if (used[size_t(i)]) return (*why = where + " repeats index " + std::to_string(i) + " of its row", false);
      used[size_t(i)] = true;
      const RowKey got = canonical(x.data_ptr<double>() + r * width + i, 1), want = canonical(key.data_ptr<double>() + r * k + p, 1);
      if (!key_equal(got, want))
        return (*why = where + " is " + std::to_string(i) + ", whose element " + row_text(got) + " is not the value " +
                       row_text(want) + " at that position",
                false);
    }
  }
  return true;
}

}  // namespace

bool has_output_freedom(const OpSchema& schema) {
  for (const OutputSpec& o : schema.outputs)
    if (o.equivalence != "elementwise" || !o.aligned_with.empty()) return true;
  return false;
}

OutputMatch match_outputs(const OpSchema& schema, const AttrMap& attrs, const std::vector<at::Tensor>& inputs,
                          const std::vector<at::Tensor>& kernel, const std::vector<at::Tensor>& oracle) {
  OutputMatch m;
  m.outputs = kernel;
  const size_t n = std::min({schema.outputs.size(), kernel.size(), oracle.size()});
  std::vector<std::vector<int64_t>> row_matching(n);
  std::vector<bool> matched(n, false);
  for (size_t i = 0; i < n && m.ok; ++i) {  // set and multiset outputs first: others may follow them
    const OutputSpec& o = schema.outputs[i];
    if ((o.equivalence != "set" && o.equivalence != "multiset") || strict(o, attrs)) continue;
    if (!kernel[i].defined() || kernel[i].sizes() != oracle[i].sizes()) continue;  // the count's check
    m.ok = match_rows(o.name, o.equivalence == "set", kernel[i], oracle[i], &row_matching[i], &m.message);
    matched[i] = m.ok;
  }
  for (size_t i = 0; i < n && m.ok; ++i) {
    const OutputSpec& o = schema.outputs[i];
    if (!kernel[i].defined() || kernel[i].sizes() != oracle[i].sizes() || strict(o, attrs)) continue;
    const int leader = o.aligned_with.empty() ? (matched[i] ? int(i) : -1) : output_index(schema, o.aligned_with);
    if (leader >= 0 && size_t(leader) < n && matched[size_t(leader)] && kernel[i].dim() > 0) {
      const at::Tensor order = at::tensor(row_matching[size_t(leader)], at::kLong);
      if (kernel[i].size(0) == order.numel()) m.outputs[i] = kernel[i].index_select(0, order);
    } else if (o.equivalence == "permutation_of_ties") {
      const int t = output_index(schema, o.tie_key);
      if (t < 0 || size_t(t) >= n || inputs.empty()) {
        m.ok = false;
        m.message = o.name + ": its tie key '" + o.tie_key + "' or the input it indexes is missing";
        break;
      }
      m.ok = valid_tied_indices(o.name, kernel[i], oracle[size_t(t)], inputs[0], &m.message);
      if (m.ok) m.outputs[i] = oracle[i].to(kernel[i].scalar_type());  // a valid choice among the ties
    }
  }
  return m;
}

}  // namespace gauntlet
