// The statelessness gate's sequence: A drawn small, and each B (new values, attributes, shape) derived from A's seed.
#include "statelessness_sequence.h"

#include <rapidcheck.h>

#include <algorithm>
#include <map>
#include <set>

#include "gauntlet/cases/case_cost.h"
#include "gauntlet/cases/property.h"
#include "gauntlet/common/numerics.h"

namespace gauntlet::statelessness_gate {
namespace {

// State shows at any size; small shapes keep a sequence of eight calls to a few ms.
constexpr int64_t kSizeCap = 64;
// Seeds of the B calls, derived from A's so a stored case replays the same sequence.
constexpr uint64_t kValuesSalt = 0x5EED0000000000B1ull, kAttrsSalt = 0x5EED0000000000B2ull, kShapeSalt = 0x5EED0000000000B3ull;

std::vector<int64_t> small_sizes(const CaseSpace& space, const std::string& dim) {
  return small_dim_sizes(space, dim, kSizeCap);
}

bool same_shapes(const Case& a, const Case& b) {
  if (a.tensors.size() != b.tensors.size()) return false;
  for (size_t i = 0; i < a.tensors.size(); ++i)
    if (a.tensors[i].shape != b.tensors[i].shape) return false;
  return true;
}

// A sibling of `a`: same shape alternative, dtype and distribution, new seed.
bool rebuild(const CaseSpace& space, const Case& a, size_t alt, const std::map<std::string, int64_t>& dims, const AttrMap& attrs,
             uint64_t salt, Case* out) {
  std::string error;
  const TensorRecipe& r = case_recipe(space.schema(), a);
  if (!space.build(dims, alt, attrs, r.dtype, r.distribution, r.seed ^ salt, out, &error)) return false;
  out->index = a.index;
  return true;
}

bool attr_constraints_hold(const OpSchema& schema, const AttrMap& attrs) {
  std::map<std::string, double> vars;
  for (const auto& [k, v] : attrs)
    vars[k] = std::holds_alternative<double>(v) ? std::get<double>(v)
              : std::holds_alternative<int64_t>(v) ? double(std::get<int64_t>(v)) : double(std::get<bool>(v));
  for (const std::string& e : schema.attr_constraints) {
    std::string error;
    auto r = eval_double_expr(e, vars, &error);
    if (!r || *r == 0) return false;
  }
  return true;
}

// A's attributes with every one the manifest leaves free moved to another valid value (the next
// listed value, another dim, a flipped bool, a doubled double, an int one up or down).
AttrMap varied_attrs(const CaseSpace& space, const Case& a) {
  const OpSchema& schema = space.schema();
  AttrMap attrs = a.attrs;
  for (const AttrSpec& spec : schema.attributes) {
    if (space.manifest().attrs.count(spec.name) || !a.attrs.count(spec.name)) continue;
    const AttrValue cur = a.attrs.at(spec.name);
    std::vector<AttrValue> tries;
    if (!spec.dim_of.empty()) {
      int64_t rank = 0;
      for (const TensorRecipe& r : a.tensors)
        if (r.name == spec.dim_of) rank = int64_t(r.shape.size());
      if (rank >= 2 && std::holds_alternative<int64_t>(cur)) {
        const int64_t d = (std::get<int64_t>(cur) + rank) % rank;
        tries.push_back(int64_t((d + 1) % rank));
      }
    } else if (spec.values.size() >= 2) {
      for (size_t k = 0; k < spec.values.size(); ++k)
        if (spec.values[k] == cur) tries.push_back(spec.values[(k + 1) % spec.values.size()]);
    } else if (std::holds_alternative<bool>(cur)) {
      tries.push_back(!std::get<bool>(cur));
    } else if (std::holds_alternative<double>(cur)) {
      const double d = std::get<double>(cur);
      tries.push_back(d == 0 ? 0.25 : d * 2);
      tries.push_back(d == 0 ? -0.25 : d / 2);
    } else {
      const int64_t i = std::get<int64_t>(cur);
      tries.push_back(i + 1);
      tries.push_back(i - 1);
    }
    for (const AttrValue& t : tries) {
      const double x = std::holds_alternative<double>(t) ? std::get<double>(t)
                       : std::holds_alternative<int64_t>(t) ? double(std::get<int64_t>(t)) : double(std::get<bool>(t));
      if ((spec.min && x < *spec.min) || (spec.max && x > *spec.max)) continue;
      AttrMap next = attrs;
      next[spec.name] = t;
      if (!attr_constraints_hold(schema, next)) continue;
      attrs = next;
      break;
    }
  }
  return attrs;
}

// A different shape for B: two of the first input's dims swapped (same element count, so a cache
// keyed by size alone is stale), else one dim one larger or smaller.
bool reshaped(const CaseSpace& space, const Case& a, size_t alt, Case* out) {
  const OpSchema& schema = space.schema();
  if (schema.inputs.empty() || schema.inputs[0].shapes.empty()) return false;
  std::vector<std::string> syms;
  for (const std::string& e : schema.inputs[0].shapes[alt % schema.inputs[0].shapes.size()])
    if (schema.dims.count(e) && std::find(syms.begin(), syms.end(), e) == syms.end()) syms.push_back(e);
  auto inside = [&](const std::string& d, int64_t v) {
    auto [lo, hi] = space.limits_for(d);
    return v >= std::max<int64_t>(lo, 1) && v <= hi;
  };
  auto attempt = [&](const std::map<std::string, int64_t>& dims) {
    Case t;
    if (!rebuild(space, a, alt, dims, a.attrs, kShapeSalt, &t) || same_shapes(a, t) || case_cost(schema, t) > 4 * std::max(kCaseCostCap, case_cost(schema, a)))
      return false;
    *out = t;
    return true;
  };
  for (size_t i = 0; i < syms.size(); ++i)
    for (size_t j = i + 1; j < syms.size(); ++j) {
      const int64_t u = a.dims.at(syms[i]), w = a.dims.at(syms[j]);
      if (u == w || !inside(syms[i], w) || !inside(syms[j], u)) continue;
      auto dims = a.dims;
      std::swap(dims[syms[i]], dims[syms[j]]);
      if (attempt(dims)) return true;
    }
  for (const std::string& s : syms)
    for (int64_t delta : {1, -1}) {
      auto dims = a.dims;
      dims[s] += delta;
      if (inside(s, dims[s]) && attempt(dims)) return true;
    }
  return false;
}

}  // namespace

bool draw_case(const CaseSpace& space, int64_t cost_cap, Case* out) {
  const OpSchema& schema = space.schema();
  if (space.dtypes().empty()) return false;
  std::map<std::string, int64_t> dims;
  for (const auto& [name, domain] : schema.dims) {
    const std::vector<int64_t> c = small_sizes(space, name);
    dims[name] = c[size_t(draw_uniform(int64_t(c.size())))];
  }
  const size_t nalt = schema.inputs.empty() ? 1 : schema.inputs[0].shapes.size();
  const size_t alt = size_t(draw_uniform(int64_t(nalt)));
  const DType dtype = draw_precise_dtype(space.dtypes());
  const AttrMap attrs = draw_attrs(space, alt);
  const uint64_t seed = pick_seed();
  std::string error;
  if (!space.build(dims, alt, attrs, dtype, Distribution::Normal, seed, out, &error)) return false;
  return case_cost(schema, *out) <= cost_cap;
}

size_t find_alt(const CaseSpace& space, const Case& c) {
  const OpSchema& schema = space.schema();
  const size_t nalt = schema.inputs.empty() ? 1 : schema.inputs[0].shapes.size();
  for (size_t k = 0; k < nalt; ++k) {
    Case t;
    std::string error;
    const TensorRecipe& r = case_recipe(schema, c);
    if (space.build(c.dims, k, c.attrs, r.dtype, r.distribution, r.seed, &t, &error) &&
        same_shapes(c, t))
      return k;
  }
  return 0;
}

std::vector<Step> plan_sequence(const CaseSpace& space, const Case& a) {
  const size_t alt = find_alt(space, a);
  std::vector<Step> steps;
  steps.push_back({"A", a, true});
  Case b;
  if (rebuild(space, a, alt, a.dims, a.attrs, kValuesSalt, &b)) {
    steps.push_back({"B: same shape, new values", b, false});
    steps.push_back({"A again", a, true});
  }
  const AttrMap attrs = varied_attrs(space, a);
  if (attrs != a.attrs && rebuild(space, a, alt, a.dims, attrs, kAttrsSalt, &b)) {
    std::string text;
    for (const auto& [k, v] : attrs)
      if (!(a.attrs.at(k) == v)) text += (text.empty() ? "" : ", ") + k + "=" + attr_to_string(v);
    steps.push_back({"B: same shape, new values, " + text, b, false});
    steps.push_back({"A again", a, true});
  }
  if (reshaped(space, a, alt, &b)) {
    std::string text;
    for (const TensorRecipe& r : b.tensors) {
      text += (text.empty() ? "" : " ") + r.name + "=[";
      for (size_t k = 0; k < r.shape.size(); ++k) text += (k ? "," : "") + std::to_string(r.shape[k]);
      text += "]";
    }
    steps.push_back({"B: new shape " + text, b, false});
    steps.push_back({"A again", a, true});
  }
  return steps;
}

}  // namespace gauntlet::statelessness_gate
