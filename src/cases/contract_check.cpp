// A manifest's contract checked against its op's schema before anything runs (contract_check.h).
#include "gauntlet/cases/contract_check.h"

#include <algorithm>
#include <cmath>

#include "gauntlet/cases/case.h"

namespace gauntlet {
namespace {

std::string shape_text(const std::vector<std::string>& pattern) {
  std::string s = "[";
  for (size_t i = 0; i < pattern.size(); ++i) s += (i ? "," : "") + pattern[i];
  return s + "]";
}

std::string list_text(const std::vector<std::string>& items, const char* sep = ", ") {
  std::string s;
  for (size_t i = 0; i < items.size(); ++i) s += (i ? sep : "") + items[i];
  return s;
}

std::string number_text(double x) {
  return x == std::floor(x) && std::fabs(x) < 1e15 ? std::to_string(int64_t(x)) : attr_to_string(AttrValue{x});
}

// The value in the attribute's own type, or "" and the reason it has none.
std::string normalise(const AttrSpec& a, AttrValue* v) {
  const bool is_bool = std::holds_alternative<bool>(*v);
  if (a.type == "bool") return is_bool ? "" : attr_to_string(*v) + " is not a bool: give true or false";
  if (is_bool) return std::string(attr_to_string(*v)) + " is a bool; attribute '" + a.name + "' is a number (" + a.type + ")";
  if (a.type == "double") {
    const double x = attr_as_double(*v);
    if (!std::isfinite(x)) return "must be a finite number";
    *v = x;
    return "";
  }
  if (auto* d = std::get_if<double>(v)) {  // int64
    if (!std::isfinite(*d) || *d != std::floor(*d) || std::fabs(*d) > 9.007199254740992e15)
      return attr_to_string(*v) + " is not a whole number (attribute '" + a.name + "' is int64)";
    *v = int64_t(*d);
  }
  return "";
}

std::string range_problem(const OpSchema& schema, const AttrSpec& a, const AttrValue& v) {
  if (!a.values.empty() && std::find(a.values.begin(), a.values.end(), v) == a.values.end()) {
    std::vector<std::string> choices;
    for (const AttrValue& c : a.values) choices.push_back(attr_to_string(c));
    return attr_to_string(v) + " is not one of op " + schema.name + "'s values " + list_text(choices, ", ");
  }
  if (a.type != "bool") {
    const double x = attr_as_double(v);
    if ((a.min && x < *a.min) || (a.max && x > *a.max))
      return attr_to_string(v) + " is outside op " + schema.name + "'s range [" +
             (a.min ? number_text(*a.min) : "-inf") + ", " + (a.max ? number_text(*a.max) : "inf") + "]";
  }
  if (!a.size_of.empty())
    return "attribute '" + a.name + "' is the size of dim " + a.size_of + " in every case: limit dim " + a.size_of +
           " in the manifest's \"shapes\" instead";
  if (!a.dim_of.empty()) {
    const InputSpec* in = schema.input(a.dim_of);
    const int64_t d = std::get<int64_t>(v);
    if (!in) return "";
    std::vector<std::string> shapes;
    for (const auto& pattern : in->shapes) {
      const int64_t rank = int64_t(pattern.size());
      if (d >= -rank && d < rank) return "";
      shapes.push_back(shape_text(pattern));
    }
    return std::to_string(d) + " is no dim of " + a.dim_of + " (its shapes: " + list_text(shapes, " or ") + ")";
  }
  return "";
}

// Whether the fixed attributes, with the schema's choices for the others, can satisfy every
// attr_constraint; "" when they can, else the first constraint no choice satisfies.
std::string attr_constraint_problem(const OpSchema& schema, const AttrMap& fixed) {
  if (schema.attr_constraints.empty()) return "";
  std::vector<std::pair<std::string, std::vector<double>>> free;
  std::map<std::string, double> vars;
  for (const AttrSpec& a : schema.attributes) {
    auto it = fixed.find(a.name);
    if (it != fixed.end()) {
      vars[a.name] = attr_as_double(it->second);
      continue;
    }
    std::vector<double> choices{attr_as_double(a.default_value)};
    for (const AttrValue& c : a.values) choices.push_back(attr_as_double(c));
    free.emplace_back(a.name, choices);
  }
  size_t combos = 1;
  for (const auto& f : free) combos = std::min<size_t>(combos * f.second.size(), 4096);
  std::string failed;
  for (size_t k = 0; k < combos; ++k) {
    size_t rest = k;
    for (const auto& [name, choices] : free) vars[name] = choices[rest % choices.size()], rest /= choices.size();
    const std::string broken = schema.broken_attr_constraint(vars, nullptr);
    if (broken.empty()) return "";
    if (failed.empty()) failed = broken;
  }
  std::vector<std::string> given;
  for (const auto& [k, v] : fixed) given.push_back(k + "=" + attr_to_string(v));
  return list_text(given) + " violates op " + schema.name + "'s attribute constraint '" + failed + "'";
}

}  // namespace

std::vector<ContractIssue> check_contract(const OpSchema& schema, KernelManifest* m) {
  std::vector<ContractIssue> issues;
  const std::vector<DType> allowed = schema.case_dtypes();
  std::vector<std::string> allowed_names;
  for (DType d : allowed) allowed_names.push_back(dtype_name(d));
  for (DType d : m->dtypes)
    if (std::find(allowed.begin(), allowed.end(), d) == allowed.end())
      issues.push_back({"dtypes", std::string("dtype ") + dtype_name(d) + " is outside op " + schema.name +
                                      "'s domain (" + list_text(allowed_names) + ")"});
  std::vector<std::string> attr_names;
  for (const AttrSpec& a : schema.attributes) attr_names.push_back(a.name);
  const std::string attr_list = attr_names.empty() ? "it has none" : "it has " + list_text(attr_names);
  for (auto& [name, value] : m->attrs) {
    const AttrSpec* a = schema.attribute(name);
    if (!a) {
      issues.push_back({"attrs/" + name, "op " + schema.name + " has no attribute '" + name + "' (" + attr_list + ")"});
      continue;
    }
    std::string why = normalise(*a, &value);
    if (why.empty()) why = range_problem(schema, *a, value);
    if (!why.empty()) issues.push_back({"attrs/" + name, why});
  }
  std::vector<std::string> dim_names;
  for (const auto& [name, dom] : schema.dims) dim_names.push_back(name);
  for (const auto& [name, lim] : m->shapes) {
    auto it = schema.dims.find(name);
    if (it == schema.dims.end()) {
      issues.push_back({"shapes/" + name, "op " + schema.name + " has no dim '" + name + "' (it has " +
                                              (dim_names.empty() ? "none" : list_text(dim_names)) + ")"});
      continue;
    }
    const int64_t lo = it->second.zero_allowed ? 0 : std::max<int64_t>(it->second.min, 1), hi = it->second.max;
    const std::string f = "shapes/" + name;
    if ((lim.min && *lim.min < 0) || (lim.max && *lim.max < 0)) issues.push_back({f, "a dim limit is never negative"});
    else if (lim.min && lim.max && *lim.min > *lim.max)
      issues.push_back({f, "min " + std::to_string(*lim.min) + " is above max " + std::to_string(*lim.max)});
    else if (lim.max && *lim.max < lo)
      issues.push_back({f, "max " + std::to_string(*lim.max) + " is below op " + schema.name + "'s smallest " + name + ", " + std::to_string(lo)});
    else if (lim.min && *lim.min > hi)
      issues.push_back({f, "min " + std::to_string(*lim.min) + " is above op " + schema.name + "'s largest " + name + ", " + std::to_string(hi)});
  }
  for (const auto& [input, ranks] : m->ranks) {
    const InputSpec* in = schema.input(input);
    std::vector<std::string> input_names;
    for (const InputSpec& i : schema.inputs) input_names.push_back(i.name);
    if (!in) {
      issues.push_back({"ranks/" + input, "op " + schema.name + " has no input '" + input + "' (it has " + list_text(input_names) + ")"});
      continue;
    }
    std::vector<std::string> shapes;
    for (const auto& pattern : in->shapes) shapes.push_back(shape_text(pattern));
    for (int64_t r : ranks) {
      bool found = false;
      for (const auto& pattern : in->shapes) found |= int64_t(pattern.size()) == r;
      if (!found)
        issues.push_back({"ranks/" + input, "op " + schema.name + " gives " + input + " no rank-" + std::to_string(r) +
                                                " shape (its shapes: " + list_text(shapes, " or ") + ")"});
    }
  }
  for (const auto& [input, structure] : m->structures) {
    const InputSpec* in = schema.input(input);
    if (!in) {
      issues.push_back({"structure/" + input, "op " + schema.name + " has no input '" + input + "'"});
      continue;
    }
    const std::string& kind = in->values.kind;
    if (kind != "real" && kind != "positive" && kind != "nonnegative")
      issues.push_back({"structure/" + input, "input " + input + " holds " + kind + " values; a structure applies to real-valued matrices"});
    for (const auto& pattern : in->shapes)
      if (pattern.size() < 2 && !(m->ranks.count(input)))
        issues.push_back({"structure/" + input, "input " + input + " has a shape of rank " + std::to_string(pattern.size()) +
                                                     "; a structure is over the last two dims (narrow \"ranks\" to 2 or more)"});
  }
  if (!m->layouts.empty() && std::find(m->layouts.begin(), m->layouts.end(), "contiguous") == m->layouts.end())
    issues.push_back({"layouts", "must include \"contiguous\" (every kernel takes contiguous inputs)"});
  for (const auto& group : m->equal_dims)
    for (const std::string& d : group)
      if (!schema.dims.count(d))
        issues.push_back({"equal_dims", "op " + schema.name + " has no dim '" + d + "' (it has " +
                                            (dim_names.empty() ? "none" : list_text(dim_names)) + ")"});
  if (!issues.empty()) return issues;
  if (std::string why = attr_constraint_problem(schema, m->attrs); !why.empty()) return {{"attrs", why}};
  // Each field may be fine alone and the whole still admit no case (dims tied by the schema's
  // constraints): tried here, as the gates would, so that is said before anything runs.
  if (m->attrs.empty() && m->shapes.empty() && m->ranks.empty() && m->equal_dims.empty()) return issues;
  CaseSpace space(schema, *m);
  if (space.dtypes().empty()) return issues;
  std::string why;
  Case c;
  for (uint64_t variant = 0; variant < 8; ++variant)
    if (space.typical_case(variant, space.dtypes()[0], Distribution::Normal, 1, &c, &why)) return issues;
  const char* field = !m->shapes.empty() ? "shapes" : !m->equal_dims.empty() ? "equal_dims" : !m->ranks.empty() ? "ranks" : "attrs";
  issues.push_back({field, "the contract admits no case of op " + schema.name + ": " + why});
  return issues;
}

std::string contract_error(const KernelManifest& m, const ContractIssue& issue) {
  const bool from_flag = std::find(m.flag_fields.begin(), m.flag_fields.end(), issue.field) != m.flag_fields.end();
  if (!from_flag && !m.manifest_path.empty()) return m.manifest_path + ": field '" + issue.field + "': " + issue.message;
  if (!from_flag) return m.source + " (the contract gauntlet gave it): field '" + issue.field + "': " + issue.message;
  if (issue.field.rfind("attrs/", 0) == 0) return "--attr " + issue.field.substr(6) + ": " + issue.message;
  if (issue.field == "attrs") return "--attr: " + issue.message;
  return "--" + issue.field + ": " + issue.message;
}

}  // namespace gauntlet
