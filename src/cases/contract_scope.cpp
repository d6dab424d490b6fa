// Scoping cases to the kernel's contract, and the fail / unsafe / pass verdict (contract_scope.h).
#include "gauntlet/cases/contract_scope.h"

#include <algorithm>

namespace gauntlet {
namespace {

std::string list_text(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s;
}

std::string names_text(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
  return s;
}

}  // namespace

std::string outside_contract_reason(const KernelManifest& m, const Case& c) {
  if (!c.outside_contract.empty()) return c.outside_contract;
  // The manifest's dtypes narrow the case dtype, which is the first floating input's (the schema's
  // case_dtype_input; inputs that follow it share it). A later floating input of a fixed dtype of
  // its own (fp8_matmul's float32 scales beside e4m3 data) is not narrowed by them.
  bool case_dtype_seen = false;
  for (const TensorRecipe& r : c.tensors) {
    if (!m.dtypes.empty() && dtype_is_floating(r.dtype) && !case_dtype_seen &&
        std::find(m.dtypes.begin(), m.dtypes.end(), r.dtype) == m.dtypes.end())
      return r.name + " is " + dtype_name(r.dtype) + ", a dtype the kernel does not declare";
    case_dtype_seen |= dtype_is_floating(r.dtype);
    if (auto it = m.ranks.find(r.name);
        it != m.ranks.end() && std::find(it->second.begin(), it->second.end(), int64_t(r.shape.size())) == it->second.end())
      return r.name + " has rank " + std::to_string(r.shape.size()) + "; the kernel declares rank " + list_text(it->second);
    if (!m.layouts.empty() && std::find(m.layouts.begin(), m.layouts.end(), r.layout) == m.layouts.end())
      return r.name + " is " + r.layout + "; the kernel declares the layouts " + names_text(m.layouts);
  }
  for (const auto& [dim, lim] : m.shapes) {
    auto it = c.dims.find(dim);
    if (it == c.dims.end()) continue;
    if (lim.max && it->second > *lim.max)
      return dim + " = " + std::to_string(it->second) + " is above the kernel's declared max " + std::to_string(*lim.max);
    if (lim.min && it->second < *lim.min)
      return dim + " = " + std::to_string(it->second) + " is below the kernel's declared min " + std::to_string(*lim.min);
  }
  for (const auto& group : m.equal_dims) {
    const std::string* first = nullptr;
    for (const std::string& d : group) {
      if (!c.dims.count(d)) continue;
      if (!first) first = &d;
      else if (c.dims.at(d) != c.dims.at(*first))
        return *first + " = " + std::to_string(c.dims.at(*first)) + " and " + d + " = " + std::to_string(c.dims.at(d)) +
               " differ; the kernel declares " + names_text(group) + " equal";
    }
  }
  return "";
}

bool note_case_scope(GateContext& ctx, const Case& c) {
  const bool outside = !outside_contract_reason(ctx.manifest, c).empty();
  ++(outside ? ctx.scopes->out : ctx.scopes->in);
  return outside;
}

void settle_scope(GateVerdict& v, int cases_in, int cases_out) {
  if (is_failing(v.status)) {
    if (v.scope.empty()) v.scope = kInContract;
  } else if (v.status == Status::Pass) {
    v.scope = cases_out == 0 ? kInContract : cases_in == 0 ? kOutOfContract : kMixedScope;
    if (cases_out > 0) v.evidence["cases_out_of_contract"] = cases_out;
  } else {
    v.scope.clear();
  }
}

bool fails_in_contract(const GateVerdict& v) {
  return is_failing(v.status) && (v.status == Status::HarnessError || v.scope != kOutOfContract);
}

std::string kernel_verdict(const std::vector<GateVerdict>& gates) {
  bool fail = false, error = false, unsafe = false;
  for (const GateVerdict& v : gates) {
    if (!is_failing(v.status)) continue;
    if (!fails_in_contract(v)) unsafe = true;
    else if (v.status == Status::Fail) fail = true;
    else error = true;
  }
  return fail ? "fail" : error ? "error" : unsafe ? "unsafe" : "pass";
}

}  // namespace gauntlet
