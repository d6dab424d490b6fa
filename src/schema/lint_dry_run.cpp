// Lint's dry run: every integer expression of a schema evaluated under each combination of its
// input shape alternatives, catching names that some alternative leaves unbound.
#include <algorithm>
#include <optional>
#include <set>
#include <variant>

#include "lint_rules.h"

namespace gauntlet::schema_internal {

// Evaluates every integer expression under each combination of input shape alternatives, with
// each dim at its first typical size and attributes at their defaults, so that an expression
// naming a dim absent from some alternative (cost "B*M*N" when x may be [N]) is caught.
void Linter::dry_run() {
  if (!issues_.empty()) return;  // names and syntax first
  std::map<std::string, int64_t> base;
  for (const auto& [n, d] : s_.dims) {
    int64_t v = std::max<int64_t>(d.min, 1);
    for (int64_t t : d.typical)
      if (t > 0) {
        v = t;
        break;
      }
    base[n] = v;
  }
  for (const auto& a : s_.attributes) {
    if (auto* i = std::get_if<int64_t>(&a.default_value)) base[a.name] = *i;
    if (auto* b = std::get_if<bool>(&a.default_value)) base[a.name] = *b;
  }
  // Dims that no shape alternative names (a key cardinality, an output-only extent) are always
  // bound; the others only when the chosen alternatives name them.
  std::set<std::string> shape_dims;
  for (const auto& in : s_.inputs)
    for (const auto& pat : in.shapes)
      for (const auto& e : pat)
        if (auto ns = expr_names(e, nullptr)) shape_dims.insert(ns->begin(), ns->end());
  auto floats = s_.case_dtypes();
  std::vector<size_t> choice(s_.inputs.size(), 0);
  size_t combos = 0;
  for (;;) {
    if (++combos > 256) break;
    std::map<std::string, int64_t> vars;
    std::string desc;
    for (const auto& [n, v] : base)
      if (attr(n) || !shape_dims.count(n)) vars[n] = v;
    for (size_t i = 0; i < s_.inputs.size(); ++i) {
      if (s_.inputs[i].shapes.empty()) return;
      const auto& pat = s_.inputs[i].shapes[choice[i]];
      desc += (desc.empty() ? "" : ", ") + s_.inputs[i].name + " " + shape_text(pat);
      for (const auto& e : pat)
        if (auto ns = expr_names(e, nullptr))
          for (const auto& n : *ns)
            if (base.count(n)) vars[n] = base.at(n);
    }
    ShapeMap shapes;
    bool shapes_ok = true;
    for (size_t i = 0; i < s_.inputs.size(); ++i) {
      std::vector<int64_t> sh;
      for (const auto& e : s_.inputs[i].shapes[choice[i]]) {
        std::string err;
        auto v = eval_expr(e, vars, &err);
        if (!v) {
          shapes_ok = false;
          break;
        }
        sh.push_back(*v);
      }
      shapes[s_.inputs[i].name] = sh;
    }
    if (shapes_ok) dry_eval(vars, base, shapes, desc, floats.empty() ? 4 : dtype_size(floats[0]));
    // next combination
    size_t k = 0;
    for (; k < choice.size(); ++k) {
      if (++choice[k] < s_.inputs[k].shapes.size()) break;
      choice[k] = 0;
    }
    if (k == choice.size()) break;
  }
}

void Linter::dry_eval(std::map<std::string, int64_t> vars, const std::map<std::string, int64_t>& all_dims,
                      const ShapeMap& shapes, const std::string& desc, int elem) {
  auto ev = [&](const std::string& e, const std::string& field) -> std::optional<int64_t> {
    std::string err;
    auto v = eval_expr(e, vars, shapes, &err);
    if (!v) issue(field, "with " + desc + ": " + err);
    return v;
  };
  bool valid = true;
  for (size_t i = 0; i < s_.constraints.size(); ++i) {
    auto v = ev(s_.constraints[i], at("/constraints", i));
    valid = valid && v && *v != 0;
  }
  for (size_t i = 0; i < s_.outputs.size(); ++i)
    for (size_t k = 0; k < s_.outputs[i].dims.size(); ++k) {
      if (s_.outputs[i].dims[k] == "?") continue;
      auto v = ev(s_.outputs[i].dims[k], at(at(at("/outputs", i), "shape"), k));
      if (v && *v < 0 && valid) issue(at(at(at("/outputs", i), "shape"), k), "with " + desc + ": negative extent " + std::to_string(*v));
    }
  for (size_t i = 0; i < s_.outputs.size(); ++i)
    if (!s_.outputs[i].max_size.empty()) ev(s_.outputs[i].max_size, at(at("/outputs", i), "max_size"));
  if (s_.reduction && !s_.reduction->K.empty()) {
    auto v = ev(s_.reduction->K, "/reduction/K");
    if (v && *v < 0) issue("/reduction/K", "with " + desc + ": negative K");
  }
  vars["elem_size"] = elem;
  for (auto [e, f] : {std::pair<const std::string*, const char*>{&s_.flops, "/cost/flops"}, {&s_.bytes, "/cost/bytes"}}) {
    auto v = ev(*e, f);
    if (v && *v < 0 && valid) issue(f, "with " + desc + ": negative cost " + std::to_string(*v));
  }
  vars.erase("elem_size");
  for (size_t i = 0; i < s_.inputs.size(); ++i) {
    const ValueDomain& v = s_.inputs[i].values;
    std::string p = at(at("/inputs", i), "values");
    if (!v.below.empty()) ev(v.below, at(p, "below"));
    if (!v.total.empty()) ev(v.total, at(p, "total"));
  }
  // An error input replaces whole shapes, so it may name any dim of the schema.
  for (const auto& [n, v] : all_dims) vars.emplace(n, v);
  for (size_t i = 0; i < s_.error_inputs.size(); ++i) {
    const ErrorInput& e = s_.error_inputs[i];
    std::string p = at("/error_inputs", i);
    for (const auto& [n, pat] : e.shape_overrides)
      for (size_t k = 0; k < pat.size(); ++k) ev(pat[k], at(at(at(p, "shapes"), n), k));
    for (const auto& [n, v] : e.value_overrides) {
      if (!v.below.empty()) ev(v.below, at(at(at(p, "values"), n), "below"));
      if (!v.low.empty()) ev(v.low, at(at(at(p, "values"), n), "low"));
      if (!v.total.empty()) ev(v.total, at(at(at(p, "values"), n), "total"));
    }
  }
}

}  // namespace gauntlet::schema_internal
