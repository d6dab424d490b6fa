// lint_schema: semantic checks of a loaded OpSchema (docs/schema-format.md, "Lint"). Every issue
// names the schema file and the field as a JSON pointer into that file.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <sstream>

#include "gauntlet/schema/manifest.h"
#include "gauntlet/schema/schema.h"

namespace gauntlet {
namespace {

const std::set<std::string> kValueKinds = {"real", "positive", "nonnegative", "index", "integer", "bool", "key", "offsets"};
const std::set<std::string> kDistributions = {"uniform", "zipf", "all_equal", "all_distinct", "sorted_runs"};
const std::set<std::string> kToleranceModes = {"exact", "ulp", "reduction", "relative-to-library"};
const std::set<std::string> kNanInf = {"propagate", "ignore", "custom"};
const std::set<std::string> kDeterminism = {"bitwise", "tolerance", "equivalence"};
const std::set<std::string> kEquivalence = {"elementwise", "permutation_of_ties", "set", "multiset"};
const std::set<std::string> kIdentity = {"0", "1", "-inf", "inf", "nan", "error", "empty", "n/a"};
const std::set<std::string> kReserved = {"elem_size", "min", "max", "size", "numel", "rank"};

std::string esc(const std::string& t) {
  std::string r;
  for (char c : t) r += c == '~' ? std::string("~0") : c == '/' ? std::string("~1") : std::string(1, c);
  return r;
}
std::string at(const std::string& b, const std::string& k) { return b + "/" + esc(k); }
std::string at(const std::string& b, size_t i) { return b + "/" + std::to_string(i); }

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

bool is_integer_dtype(DType d) { return d == DType::Int64 || d == DType::Int32 || d == DType::Int8 || d == DType::UInt8; }

std::string shape_text(const std::vector<std::string>& p) {
  std::string r = "[";
  for (size_t i = 0; i < p.size(); ++i) r += (i ? "," : "") + p[i];
  return r + "]";
}

class Linter {
 public:
  Linter(const OpSchema& s, const std::vector<std::string>& oracles) : s_(s), oracles_(oracles) {}

  std::vector<SchemaIssue> run() {
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

 private:
  const OpSchema& s_;
  const std::vector<std::string>& oracles_;
  std::vector<SchemaIssue> issues_;
  std::set<std::pair<std::string, std::string>> seen_;

  void issue(const std::string& field, const std::string& msg) {
    if (seen_.insert({field, msg}).second) issues_.push_back({s_.source_file, field, msg});
  }

  bool is_dim(const std::string& n) const { return s_.dims.count(n) > 0; }
  const AttrSpec* attr(const std::string& n) const { return s_.attribute(n); }
  const InputSpec* input(const std::string& n) const { return s_.input(n); }
  const OutputSpec* output(const std::string& n) const {
    for (const auto& o : s_.outputs)
      if (o.name == n) return &o;
    return nullptr;
  }

  // Checks an integer expression: parses, names only dims / int-or-bool attrs (and elem_size when
  // `cost`), shape functions name inputs. `allow_question` accepts the data-dependent "?" extent.
  void check_expr(const std::string& e, const std::string& field, bool cost = false) {
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

  void check_values(const ValueDomain& v, const std::string& p, const std::vector<DType>* dtypes) {
    if (!kValueKinds.count(v.kind)) {
      issue(at(p, "kind"), "unknown value kind \"" + v.kind + "\"");
      return;
    }
    if (!v.structure.empty() && !is_structure_name(v.structure))
      issue(at(p, "structure"), "unknown structure \"" + v.structure + "\" (" + kStructureNames + ")");
    bool ranged = v.kind == "index" || v.kind == "integer" || v.kind == "key";
    if (ranged) {
      if (v.below.empty()) issue(at(p, "below"), "kind \"" + v.kind + "\" needs \"below\" (values in [low, below))");
      else check_expr(v.below, at(p, "below"));
      check_expr(v.low.empty() ? "0" : v.low, at(p, "low"));
    } else {
      if (!v.below.empty()) issue(at(p, "below"), "\"below\" applies to kinds index, integer and key");
      if (!v.low.empty() && v.low != "0") issue(at(p, "low"), "\"low\" applies to kinds index, integer and key");
    }
    if (!v.distribution.empty()) {
      if (v.kind != "key" && v.kind != "offsets")
        issue(at(p, "distribution"), "\"distribution\" applies to kinds key and offsets");
      else if (!kDistributions.count(v.distribution))
        issue(at(p, "distribution"), "unknown distribution \"" + v.distribution + "\"");
    }
    if (v.alpha) {
      if (v.distribution != "zipf") issue(at(p, "alpha"), "\"alpha\" applies to distribution zipf");
      else if (!(*v.alpha > 0)) issue(at(p, "alpha"), "zipf alpha must be > 0");
    } else if (v.distribution == "zipf") {
      issue(at(p, "alpha"), "distribution zipf needs \"alpha\" (its exponent)");
    }
    if (v.sorted && v.kind != "key" && v.kind != "index")
      issue(at(p, "sorted"), "\"sorted\" applies to kinds key and index");
    if (v.kind == "offsets") {
      if (v.total.empty()) issue(at(p, "total"), "kind offsets needs \"total\" (the last offset)");
      else check_expr(v.total, at(p, "total"));
    } else if (!v.total.empty()) {
      issue(at(p, "total"), "\"total\" applies to kind offsets");
    }
    if (dtypes) {
      for (DType d : *dtypes) {
        bool ok = true;
        if (v.kind == "bool") ok = d == DType::Bool;
        else if (ranged || v.kind == "offsets") ok = is_integer_dtype(d);
        else ok = dtype_is_floating(d) || is_integer_dtype(d);  // real-like kinds: any numeric dtype
        if (!ok) issue(at(p, "kind"), std::string("value kind \"") + v.kind + "\" does not fit dtype " + dtype_name(d));
      }
    }
  }

  // A structure lives in the last two dims of a real-valued matrix; "symmetric" needs them equal
  // (the same dim name in every shape alternative), or the projection could not be made.
  void check_structure(const InputSpec& in, const std::string& p) {
    const std::string& s = in.values.structure;
    if (s.empty()) return;
    if (in.values.kind != "real" && in.values.kind != "positive" && in.values.kind != "nonnegative") {
      issue(at(p, "structure"), "\"structure\" applies to real-valued kinds (real, positive, nonnegative)");
      return;
    }
    for (const auto& shape : in.shapes) {
      if (shape.size() < 2) {
        issue(at(p, "structure"), "\"structure\" needs every shape of rank >= 2 (it is over the last two dims)");
        return;
      }
      if (s == "symmetric" && shape[shape.size() - 1] != shape[shape.size() - 2]) {
        issue(at(p, "structure"), "\"symmetric\" needs the last two dims to be the same dim (square matrices)");
        return;
      }
    }
  }

  void names() {
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
      if (kReserved.count(n)) issue(field, "\"" + n + "\" is reserved by the expression language");
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

  void dims() {
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

  void inputs() {
    if (s_.inputs.empty()) issue("/inputs", "no inputs");
    for (size_t i = 0; i < s_.inputs.size(); ++i) {
      const InputSpec& in = s_.inputs[i];
      std::string p = at("/inputs", i);
      if (in.shapes.empty()) issue(at(p, "shapes"), "no shape alternatives");
      size_t max_rank = 0;
      bool has4 = false;
      for (size_t a = 0; a < in.shapes.size(); ++a) {
        max_rank = std::max(max_rank, in.shapes[a].size());
        has4 = has4 || in.shapes[a].size() == 4;
        for (size_t k = 0; k < in.shapes[a].size(); ++k)
          check_expr(in.shapes[a][k], at(at(at(p, "shapes"), a), k));
      }
      if (in.dtypes.empty() == in.same_dtype_as.empty())
        issue(at(p, "dtypes"), in.dtypes.empty() ? "needs \"dtypes\" or \"same_dtype_as\""
                                                 : "give either \"dtypes\" or \"same_dtype_as\", not both");
      if (!in.same_dtype_as.empty()) {
        if (in.same_dtype_as == in.name) issue(at(p, "same_dtype_as"), "an input cannot follow its own dtype");
        else if (!input(in.same_dtype_as)) issue(at(p, "same_dtype_as"), "unknown input \"" + in.same_dtype_as + "\"");
        else {
          // cycle check
          const InputSpec* cur = &in;
          for (int hop = 0; hop < 64 && cur && !cur->same_dtype_as.empty(); ++hop) {
            cur = input(cur->same_dtype_as);
            if (cur == &in) {
              issue(at(p, "same_dtype_as"), "same_dtype_as forms a cycle");
              break;
            }
          }
        }
      }
      if (!in.broadcast_to.empty()) {
        if (in.broadcast_to == in.name) issue(at(p, "broadcast_to"), "an input cannot broadcast to itself");
        else if (!input(in.broadcast_to)) issue(at(p, "broadcast_to"), "unknown input \"" + in.broadcast_to + "\"");
      }
      const std::vector<DType>* dts = in.dtypes.empty() ? nullptr : &in.dtypes;
      check_values(in.values, at(p, "values"), dts);
      check_structure(in, at(p, "values"));
      if (in.layouts.empty()) issue(at(p, "layouts"), "no layouts (at least \"contiguous\")");
      else if (std::find(in.layouts.begin(), in.layouts.end(), "contiguous") == in.layouts.end())
        issue(at(p, "layouts"), "layouts must include \"contiguous\"");
      for (size_t k = 0; k < in.layouts.size(); ++k) {
        const std::string& l = in.layouts[k];
        std::string lp = at(at(p, "layouts"), k);
        if (!is_layout_name(l)) issue(lp, "unknown layout \"" + l + "\"");
        else if (l == "channels_last" && !has4) issue(lp, "channels_last needs a rank-4 shape alternative");
        else if (l == "transposed" && max_rank < 2) issue(lp, "transposed needs a shape alternative of rank >= 2");
      }
      if (!in.quant_scale.empty()) {
        std::string qp = at(p, "quantization");
        if (!input(in.quant_scale) || in.quant_scale == in.name)
          issue(at(qp, "scale"), "unknown scale input \"" + in.quant_scale + "\"");
        if (!in.quant_zero_point.empty() && (!input(in.quant_zero_point) || in.quant_zero_point == in.name))
          issue(at(qp, "zero_point"), "unknown zero-point input \"" + in.quant_zero_point + "\"");
        for (DType d : in.dtypes)
          if (!is_integer_dtype(d)) issue(at(p, "dtypes"), std::string("quantized input with non-integer dtype ") + dtype_name(d));
        if (in.quant_axis && (*in.quant_axis < -int64_t(max_rank) || *in.quant_axis >= int64_t(max_rank)))
          issue(at(qp, "axis"), "quantization axis out of range");
      } else if (!in.quant_zero_point.empty() || in.quant_axis) {
        issue(at(at(p, "quantization"), "scale"), "quantization needs \"scale\"");
      }
    }
  }

  bool type_matches(const AttrValue& v, const std::string& type) const {
    if (type == "int64") return std::holds_alternative<int64_t>(v);
    if (type == "double") return std::holds_alternative<double>(v);
    if (type == "bool") return std::holds_alternative<bool>(v);
    return false;
  }
  void check_attr_value(const AttrSpec& a, const AttrValue& v, const std::string& field, const char* what) {
    if (!type_matches(v, a.type)) {
      issue(field, std::string(what) + " " + attr_to_string(v) + " is not of type " + a.type);
      return;
    }
    if (a.type != "bool") {
      double x = attr_as_double(v);
      if (std::isnan(x)) issue(field, std::string(what) + " is NaN");
      if (a.min && x < *a.min) issue(field, std::string(what) + " " + attr_to_string(v) + " below min " + attr_to_string(AttrValue{*a.min}));
      if (a.max && x > *a.max) issue(field, std::string(what) + " " + attr_to_string(v) + " above max " + attr_to_string(AttrValue{*a.max}));
    }
    if (!a.dim_of.empty() && std::holds_alternative<int64_t>(v)) {
      if (const InputSpec* in = input(a.dim_of)) {
        int64_t d = std::get<int64_t>(v);
        for (const auto& pat : in->shapes) {
          int64_t r = static_cast<int64_t>(pat.size());
          if (d < -r || d >= r) {
            issue(field, std::string(what) + " " + std::to_string(d) + " is not a dim of " + a.dim_of + " " + shape_text(pat));
            break;
          }
        }
      }
    }
  }

  void attributes() {
    for (size_t i = 0; i < s_.attributes.size(); ++i) {
      const AttrSpec& a = s_.attributes[i];
      std::string p = at("/attributes", i);
      if (a.type != "int64" && a.type != "double" && a.type != "bool") {
        issue(at(p, "type"), "unknown attribute type \"" + a.type + "\" (int64, double or bool)");
        continue;
      }
      if (a.min && a.max && *a.min > *a.max) issue(at(p, "max"), "max below min");
      if (a.type == "bool" && (a.min || a.max)) issue(at(p, "min"), "min/max do not apply to bool attributes");
      check_attr_value(a, a.default_value, at(p, "default"), "default");
      for (size_t k = 0; k < a.values.size(); ++k) check_attr_value(a, a.values[k], at(at(p, "values"), k), "value");
      if (!a.values.empty() && std::find(a.values.begin(), a.values.end(), a.default_value) == a.values.end())
        issue(at(p, "default"), "default " + attr_to_string(a.default_value) + " is not among \"values\"");
      if (!a.dim_of.empty()) {
        if (a.type != "int64") issue(at(p, "dim_of"), "dim_of needs type int64");
        if (!input(a.dim_of)) issue(at(p, "dim_of"), "unknown input \"" + a.dim_of + "\"");
      }
    }
    // attr_constraints: evaluate in double with the defaults; they must parse, name attributes, hold.
    std::map<std::string, double> vars;
    for (const auto& a : s_.attributes) vars[a.name] = attr_as_double(a.default_value);
    for (size_t i = 0; i < s_.attr_constraints.size(); ++i) {
      std::string err;
      auto v = eval_double_expr(s_.attr_constraints[i], vars, &err);
      std::string f = at("/attr_constraints", i);
      if (!v) issue(f, "attribute constraint: " + err);
      else if (*v == 0) issue(f, "the attribute defaults violate \"" + s_.attr_constraints[i] + "\"");
    }
  }

  void exprs_lists() {
    for (size_t i = 0; i < s_.constraints.size(); ++i) check_expr(s_.constraints[i], at("/constraints", i));
  }

  void outputs() {
    if (s_.outputs.empty()) issue("/outputs", "no outputs");
    for (size_t i = 0; i < s_.outputs.size(); ++i) {
      const OutputSpec& o = s_.outputs[i];
      std::string p = at("/outputs", i);
      std::string sp = at(p, "shape");
      int questions = 0;
      if (!o.shape_rule.empty() && !o.dims.empty()) issue(sp, "give a shape rule or a dim list, not both");
      if (!o.shape_rule.empty()) {
        const std::string& r = o.shape_rule;
        if (r == "scalar") {
        } else if (r.rfind("same:", 0) == 0) {
          if (!input(r.substr(5))) issue(sp, "\"" + r + "\": unknown input \"" + r.substr(5) + "\"");
        } else if (r.rfind("reduce:", 0) == 0) {
          std::string rest = r.substr(7);
          size_t c = rest.find(':');
          if (c == std::string::npos) {
            issue(sp, "\"" + r + "\": expected reduce:<input>:<dim attribute>");
          } else {
            std::string x = rest.substr(0, c), d = rest.substr(c + 1);
            if (!input(x)) issue(sp, "\"" + r + "\": unknown input \"" + x + "\"");
            const AttrSpec* a = attr(d);
            if (!a) issue(sp, "\"" + r + "\": unknown attribute \"" + d + "\"");
            else if (a->type != "int64" || a->dim_of.empty())
              issue(sp, "\"" + r + "\": attribute \"" + d + "\" is not an int64 dim attribute (dim_of)");
          }
        } else if (r.rfind("broadcast:", 0) == 0) {
          std::string rest = r.substr(10);
          std::stringstream ss(rest);
          std::string n;
          int count = 0;
          while (std::getline(ss, n, ',')) {
            ++count;
            if (!input(n)) issue(sp, "\"" + r + "\": unknown input \"" + n + "\"");
          }
          if (count < 2) issue(sp, "\"" + r + "\": broadcast needs at least two inputs");
        } else {
          issue(sp, "unknown shape rule \"" + r + "\" (same:x, reduce:x:dim, scalar, broadcast:a,b or a dim list)");
        }
      } else if (o.dims.empty()) {
        // A 0-d output is written "scalar"; an empty list is ambiguous.
        issue(sp, "empty shape (write \"scalar\" for a 0-d output)");
      }
      for (size_t k = 0; k < o.dims.size(); ++k) {
        if (o.dims[k] == "?") {
          ++questions;
          continue;
        }
        check_expr(o.dims[k], at(sp, k));
      }
      if (o.dtype.rfind("same:", 0) == 0) {
        if (!input(o.dtype.substr(5))) issue(at(p, "dtype"), "\"" + o.dtype + "\": unknown input");
      } else if (!dtype_from_name(o.dtype)) {
        issue(at(p, "dtype"), "unknown dtype \"" + o.dtype + "\"");
      }
      if (!kEquivalence.count(o.equivalence)) issue(at(p, "equivalence"), "unknown equivalence \"" + o.equivalence + "\"");
      if (o.equivalence == "permutation_of_ties") {
        const OutputSpec* t = output(o.tie_key);
        if (o.tie_key.empty()) issue(at(p, "tie_key"), "permutation_of_ties needs \"tie_key\" (the output whose equal values are ties)");
        else if (!t || t == &o) issue(at(p, "tie_key"), "unknown output \"" + o.tie_key + "\"");
      } else if (!o.tie_key.empty()) {
        issue(at(p, "tie_key"), "\"tie_key\" applies to equivalence permutation_of_ties");
      }
      if (!o.aligned_with.empty()) {
        const OutputSpec* t = output(o.aligned_with);
        if (!t || t == &o) issue(at(p, "aligned_with"), "unknown output \"" + o.aligned_with + "\"");
        else if (t->equivalence != "set" && t->equivalence != "multiset" && t->equivalence != "permutation_of_ties")
          issue(at(p, "aligned_with"), "\"" + o.aligned_with + "\" is compared elementwise; alignment needs a set, multiset or permutation_of_ties output");
      }
      if (!o.strict_when.empty()) {
        const AttrSpec* a = attr(o.strict_when);
        if (!a || a->type != "bool") issue(at(p, "strict_when"), "\"" + o.strict_when + "\" is not a bool attribute");
        if (o.equivalence == "elementwise") issue(at(p, "strict_when"), "an elementwise output is always strict");
      }
      if (o.size_rule == "data_dependent") {
        if (questions != 1) issue(sp, "a data_dependent output needs a dim list with exactly one \"?\"");
        if (o.max_size.empty()) issue(at(p, "max_size"), "a data_dependent output needs \"max_size\"");
        else check_expr(o.max_size, at(p, "max_size"));
      } else if (o.size_rule == "static") {
        if (questions) issue(sp, "\"?\" needs size_rule data_dependent");
        if (!o.max_size.empty()) issue(at(p, "max_size"), "\"max_size\" applies to size_rule data_dependent");
      } else {
        issue(at(p, "size_rule"), "unknown size_rule \"" + o.size_rule + "\" (static or data_dependent)");
      }
    }
  }

  void oracle_and_tolerance() {
    if (s_.oracle.empty()) issue("/oracle", "missing oracle id");
    else if (!oracles_.empty() && std::find(oracles_.begin(), oracles_.end(), s_.oracle) == oracles_.end())
      issue("/oracle", "unknown oracle id \"" + s_.oracle + "\"");
    std::vector<DType> floats = s_.float_dtypes();
    for (DType d : floats)
      if (!s_.tolerance.count(d))
        issue(at("/tolerance", dtype_name(d)), std::string("missing tolerance for ") + dtype_name(d) +
                                                   " (the first input allows it)");
    // Keys must be dtypes the first input allows.
    std::vector<DType> first;
    if (!s_.inputs.empty()) {
      const InputSpec* in = &s_.inputs[0];
      for (int hop = 0; hop < 16 && in && in->dtypes.empty() && !in->same_dtype_as.empty(); ++hop) in = input(in->same_dtype_as);
      if (in) first = in->dtypes;
    }
    for (const auto& [d, t] : s_.tolerance) {
      std::string p = at("/tolerance", dtype_name(d));
      if (std::find(first.begin(), first.end(), d) == first.end())
        issue(p, std::string("tolerance for ") + dtype_name(d) + ", which the first input does not allow");
      if (t.reason.empty()) issue(at(p, "reason"), "missing reason");
      if (!kToleranceModes.count(t.mode)) {
        issue(at(p, "mode"), "unknown tolerance mode \"" + t.mode + "\"");
        continue;
      }
      if (t.ulps < 0) issue(at(p, "ulps"), "ulps must be >= 0");
      if (t.mode == "ulp" && !(t.ulps > 0)) issue(at(p, "ulps"), "mode ulp needs ulps > 0 (use exact for 0)");
      if (t.mode == "reduction") {
        if (!(t.c > 0)) issue(at(p, "c"), "mode reduction needs c > 0");
        if (!(t.ceiling_c > 0)) issue(at(p, "ceiling_c"), "mode reduction needs ceiling_c > 0");
        auto acc = dtype_from_name(t.accumulator);
        if (!acc || !dtype_is_floating(*acc)) issue(at(p, "accumulator"), "accumulator \"" + t.accumulator + "\" is not a floating dtype");
      }
      if (t.mode == "relative-to-library" && !(t.factor > 0)) issue(at(p, "factor"), "mode relative-to-library needs factor > 0");
      if (t.mode == "exact" && (t.ulps != 0 || t.c != 0)) issue(p, "mode exact takes no ulps or c");
    }
  }

  void semantics() {
    if (!kNanInf.count(s_.nan_inf)) issue("/nan_inf/policy", "unknown policy \"" + s_.nan_inf + "\" (propagate, ignore, custom)");
    if (s_.nan_inf == "custom" && s_.nan_inf_notes.empty()) issue("/nan_inf/notes", "policy custom needs notes");
    if (!kDeterminism.count(s_.determinism))
      issue("/determinism", "unknown determinism \"" + s_.determinism + "\" (bitwise, tolerance, equivalence)");
    if (s_.determinism != "bitwise" && s_.determinism_notes.empty())
      issue("/determinism_notes", "a non-bitwise determinism needs determinism_notes (where the nondeterminism comes from)");
    if (s_.determinism == "equivalence" &&
        std::none_of(s_.outputs.begin(), s_.outputs.end(), [](const OutputSpec& o) { return o.equivalence != "elementwise"; }))
      issue("/determinism", "determinism equivalence needs an output whose equivalence is not elementwise");
  }

  void reduction_and_cost() {
    bool dim_attr = std::any_of(s_.attributes.begin(), s_.attributes.end(), [](const AttrSpec& a) { return !a.dim_of.empty(); });
    if (!s_.reduction) {
      if (dim_attr) issue("/reduction", "reduction is null but an attribute is a dim (dim_of)");
    } else {
      const ReductionInfo& r = *s_.reduction;
      if (!r.dim_attr.empty()) {
        const AttrSpec* a = attr(r.dim_attr);
        if (!a) issue("/reduction/dim_attr", "unknown attribute \"" + r.dim_attr + "\"");
        else if (a->dim_of.empty()) issue("/reduction/dim_attr", "attribute \"" + r.dim_attr + "\" is not a dim attribute (dim_of)");
      }
      if (r.K.empty()) issue("/reduction/K", "missing K");
      else check_expr(r.K, "/reduction/K");
      if (!kIdentity.count(r.identity))
        issue("/reduction/identity", "unknown identity \"" + r.identity + "\" (0, 1, -inf, inf, nan, error, empty, n/a)");
    }
    if (s_.flops.empty()) issue("/cost/flops", "missing FLOP expression");
    else check_expr(s_.flops, "/cost/flops", true);
    if (s_.bytes.empty()) issue("/cost/bytes", "missing byte expression");
    else check_expr(s_.bytes, "/cost/bytes", true);
  }

  void error_inputs() {
    if (s_.error_inputs.empty() && s_.error_inputs_note.empty())
      issue("/error_inputs", "no error inputs: add some or say why in \"error_inputs_note\"");
    for (size_t i = 0; i < s_.error_inputs.size(); ++i) {
      const ErrorInput& e = s_.error_inputs[i];
      std::string p = at("/error_inputs", i);
      if (e.description.empty()) issue(at(p, "description"), "missing description");
      for (const auto& [n, pat] : e.shape_overrides) {
        std::string f = at(at(p, "shapes"), n);
        if (!input(n)) issue(f, "unknown input \"" + n + "\"");
        for (size_t k = 0; k < pat.size(); ++k) check_expr(pat[k], at(f, k));
      }
      for (const auto& [n, v] : e.value_overrides) {
        std::string f = at(at(p, "values"), n);
        const InputSpec* in = input(n);
        if (!in) issue(f, "unknown input \"" + n + "\"");
        check_values(v, f, in && !in->dtypes.empty() ? &in->dtypes : nullptr);
      }
      for (const auto& [n, d] : e.dtype_overrides)
        if (!input(n)) issue(at(at(p, "dtypes"), n), "unknown input \"" + n + "\"");
      for (const auto& [n, v] : e.attr_overrides) {
        const AttrSpec* a = attr(n);
        if (!a) issue(at(at(p, "attrs"), n), "unknown attribute \"" + n + "\"");
        else if (!type_matches(v, a->type)) issue(at(at(p, "attrs"), n), "value is not of type " + a->type);
      }
      for (size_t k = 0; k < e.constraints.size(); ++k) check_expr(e.constraints[k], at(at(p, "constraints"), k));
      if (e.shape_overrides.empty() && e.value_overrides.empty() && e.dtype_overrides.empty() && e.attr_overrides.empty())
        issue(p, "an error input must override at least one of shapes, values, dtypes, attrs");
    }
  }

  void forbidden() {
    if (s_.forbidden_ops.empty()) issue("/forbidden_ops", "no forbidden ops (list at least the op's own ATen reference)");
    for (size_t i = 0; i < s_.forbidden_ops.size(); ++i) {
      const std::string& o = s_.forbidden_ops[i];
      size_t c = o.find("::");
      if (c == std::string::npos || c == 0 || c + 2 >= o.size())
        issue(at("/forbidden_ops", i), "\"" + o + "\" is not a qualified operator name like aten::mm");
    }
  }

  // Evaluates every integer expression under each combination of input shape alternatives, with
  // each dim at its first typical size and attributes at their defaults, so that an expression
  // naming a dim absent from some alternative (cost "B*M*N" when x may be [N]) is caught.
  void dry_run() {
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
    auto floats = s_.float_dtypes();
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

  void dry_eval(std::map<std::string, int64_t> vars, const std::map<std::string, int64_t>& all_dims,
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
      }
    }
  }
};

}  // namespace

std::vector<SchemaIssue> lint_schema(const OpSchema& s, const std::vector<std::string>& known_oracles) {
  return Linter(s, known_oracles).run();
}

}  // namespace gauntlet
