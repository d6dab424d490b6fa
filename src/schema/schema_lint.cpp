// lint_schema: semantic checks of a loaded OpSchema (docs/schema-format.md, "Lint"). Every issue
// names the schema file and the field as a JSON pointer into that file. This file holds the order
// of the checks, names, dims and expressions; the other themes are in lint_inputs.cpp,
// lint_outputs.cpp and lint_dry_run.cpp.
#include <cctype>
#include <set>

#include "gauntlet/schema/schema.h"
#include "lint_rules.h"

namespace gauntlet {
namespace schema_internal {
namespace {

const std::set<std::string> kReserved = {"elem_size", "min", "max", "size", "numel", "rank"};

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

}  // namespace

bool is_integer_dtype(DType d) { return d == DType::Int64 || d == DType::Int32 || d == DType::Int8 || d == DType::UInt8; }

std::string shape_text(const std::vector<std::string>& p) {
  std::string r = "[";
  for (size_t i = 0; i < p.size(); ++i) r += (i ? "," : "") + p[i];
  return r + "]";
}

std::vector<SchemaIssue> Linter::run() {
  names();
  dims();
  inputs();
  attributes();
  exprs_lists();
  outputs();
  oracle_and_tolerance();
  semantics();
  reduction_and_cost();
  error_inputs();
  forbidden();
  dry_run();
  return std::move(issues_);
}

// Checks an integer expression: parses, names only dims / int-or-bool attrs (and elem_size when
// `cost`), shape functions name inputs. `allow_question` accepts the data-dependent "?" extent.
void Linter::check_expr(const std::string& e, const std::string& field, bool cost) {
  if (e.empty()) {
    issue(field, "empty expression");
    return;
  }
  std::string err;
  auto refs = expr_refs(e, &err);
  if (!refs) {
    issue(field, "expression does not parse: " + err);
    return;
  }
  for (const auto& n : refs->names) {
    if (is_dim(n)) continue;
    if (cost && n == "elem_size") continue;
    if (const AttrSpec* a = attr(n)) {
      if (a->type == "int64" || a->type == "bool") continue;
      issue(field, "\"" + e + "\": attribute '" + n + "' is " + a->type +
                       "; integer expressions take dims and int64/bool attributes (use attr_constraints)");
      continue;
    }
    if (input(n)) {
      issue(field, "\"" + e + "\": '" + n + "' is an input; use size(" + n + ", d), numel(" + n + ") or rank(" + n + ")");
      continue;
    }
    issue(field, "\"" + e + "\": unknown name '" + n + "' (not a dim" + std::string(cost ? ", elem_size" : "") +
                     " or int64/bool attribute)");
  }
  for (const auto& n : refs->inputs)
    if (!input(n)) issue(field, "\"" + e + "\": unknown input '" + n + "' in a shape function");
}

void Linter::names() {
  if (s_.schema_version != 1) issue("/schema_version", "unsupported schema_version");
  if (s_.name.empty()) issue("/name", "missing op name");
  else if (!is_identifier(s_.name)) issue("/name", "op name must be an identifier");
  if (s_.semantics.empty()) issue("/semantics", "missing semantics");
  std::map<std::string, std::string> where;  // name -> field of first declaration
  auto declare = [&](const std::string& n, const std::string& field, const char* what) {
    if (n.empty()) {
      issue(field, std::string("missing ") + what + " name");
      return;
    }
    if (!is_identifier(n)) issue(field, std::string(what) + " name \"" + n + "\" is not an identifier");
    // A function's name is a variable wherever no '(' follows it (expr.cpp parses `size` as a name
    // and `size(x, 0)` as a call), so an attribute may take it: SPEC fixes scatter_add's `size`.
    // Dims and inputs may not (an input named size would read as size(...)'s first argument).
    const bool function_name = n != "elem_size";
    if (kReserved.count(n) && !(function_name && std::string(what) == "attribute"))
      issue(field, "\"" + n + "\" is reserved by the expression language");
    auto [it, fresh] = where.emplace(n, field);
    if (!fresh) issue(field, "name \"" + n + "\" is already declared at " + it->second);
  };
  for (const auto& [n, d] : s_.dims) declare(n, at("/dims", n), "dim");
  for (size_t i = 0; i < s_.inputs.size(); ++i) declare(s_.inputs[i].name, at(at("/inputs", i), "name"), "input");
  for (size_t i = 0; i < s_.attributes.size(); ++i)
    declare(s_.attributes[i].name, at(at("/attributes", i), "name"), "attribute");
  std::set<std::string> outs;
  for (size_t i = 0; i < s_.outputs.size(); ++i) {
    const std::string& n = s_.outputs[i].name;
    std::string f = at(at("/outputs", i), "name");
    if (n.empty()) issue(f, "missing output name");
    else if (!outs.insert(n).second) issue(f, "duplicate output name \"" + n + "\"");
  }
}

void Linter::dims() {
  if (s_.dims.empty()) issue("/dims", "no dims declared");
  std::set<std::string> used;
  auto use = [&](const std::string& e) {
    if (auto n = expr_names(e, nullptr)) used.insert(n->begin(), n->end());
  };
  for (const auto& in : s_.inputs) {
    for (const auto& pat : in.shapes)
      for (const auto& e : pat) use(e);
    // A dim may also size a value domain only (the key cardinality of a group-by).
    for (const std::string* e : {&in.values.low, &in.values.below, &in.values.total})
      if (!e->empty()) use(*e);
  }
  for (const auto& [name, d] : s_.dims) {
    std::string p = at("/dims", name);
    if (d.min < 0) issue(at(p, "min"), "min must be >= 0");
    if (d.max < d.min) issue(at(p, "max"), "max " + std::to_string(d.max) + " < min " + std::to_string(d.min));
    if (d.min == 0 && !d.zero_allowed) issue(at(p, "min"), "min 0 without zero_allowed: set zero_allowed (min is the smallest nonzero size)");
    auto in_domain = [&](int64_t v) { return (v >= d.min && v <= d.max) || (v == 0 && d.zero_allowed); };
    if (d.typical.empty()) issue(at(p, "typical"), "no typical sizes");
    for (size_t i = 0; i < d.typical.size(); ++i)
      if (!in_domain(d.typical[i]))
        issue(at(at(p, "typical"), i), "typical size " + std::to_string(d.typical[i]) + " outside [" +
                                           std::to_string(d.min) + ", " + std::to_string(d.max) + "]" +
                                           (d.typical[i] == 0 ? " (zero_allowed is false)" : ""));
    for (size_t i = 0; i < d.hazards.size(); ++i)
      if (!in_domain(d.hazards[i]))
        issue(at(at(p, "hazards"), i), "hazard size " + std::to_string(d.hazards[i]) + " outside [" +
                                           std::to_string(d.min) + ", " + std::to_string(d.max) + "]");
    if (!used.count(name)) issue(p, "dim \"" + name + "\" is used by no input shape or value domain");
  }
  if (s_.max_numel < 0) issue("/max_numel", "max_numel must be >= 0 (0: no cap)");
}

void Linter::exprs_lists() {
  for (size_t i = 0; i < s_.constraints.size(); ++i) check_expr(s_.constraints[i], at("/constraints", i));
  for (size_t i = 0; i < s_.coupled_dims.size(); ++i)
    if (!s_.dims.count(s_.coupled_dims[i])) issue(at("/coupled_dims", i), "unknown dim \"" + s_.coupled_dims[i] + "\"");
}

void Linter::forbidden() {
  if (s_.forbidden_ops.empty()) issue("/forbidden_ops", "no forbidden ops (list at least the op's own ATen reference)");
  for (size_t i = 0; i < s_.forbidden_ops.size(); ++i) {
    const std::string& o = s_.forbidden_ops[i];
    size_t c = o.find("::");
    if (c == std::string::npos || c == 0 || c + 2 >= o.size())
      issue(at("/forbidden_ops", i), "\"" + o + "\" is not a qualified operator name like aten::mm");
  }
}

}  // namespace schema_internal

std::vector<SchemaIssue> lint_schema(const OpSchema& s, const std::vector<std::string>& known_oracles) {
  return schema_internal::Linter(s, known_oracles).run();
}

}  // namespace gauntlet
