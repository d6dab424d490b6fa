// Lint rules for what an op takes: inputs (shapes, dtypes, value domains, layouts, quantization),
// attributes and their constraints, and the error inputs that override them.
#include <algorithm>
#include <cmath>
#include <set>
#include <variant>

#include "gauntlet/schema/manifest.h"
#include "lint_rules.h"

namespace gauntlet::schema_internal {
namespace {

const std::set<std::string> kValueKinds = {"real", "positive", "nonnegative", "index", "integer", "bool", "key", "offsets",
                                           "quantizable"};
const std::set<std::string> kDistributions = {"uniform", "zipf", "all_equal", "all_distinct", "sorted_runs",
                                             "int64_limits"};

}  // namespace

void Linter::check_values(const ValueDomain& v, const std::string& p, const std::vector<DType>* dtypes) {
  if (!kValueKinds.count(v.kind)) {
    issue(at(p, "kind"), "unknown value kind \"" + v.kind + "\"");
    return;
  }
  if (!v.structure.empty() && !is_structure_name(v.structure))
    issue(at(p, "structure"), "unknown structure \"" + v.structure + "\" (" + kStructureNames + ")");
  bool ranged = v.kind == "index" || v.kind == "integer" || v.kind == "key";
  check_quantizable(v, p);
  if (ranged || v.kind == "quantizable") {
    if (v.below.empty()) issue(at(p, "below"), "kind \"" + v.kind + "\" needs \"below\" (values in [low, below))");
    else check_expr(v.below, at(p, "below"));
    check_expr(v.low.empty() ? "0" : v.low, at(p, "low"));
  } else {
    if (!v.below.empty()) issue(at(p, "below"), "\"below\" applies to kinds index, integer, key and quantizable");
    if (!v.low.empty() && v.low != "0") issue(at(p, "low"), "\"low\" applies to kinds index, integer, key and quantizable");
  }
  if (!v.distribution.empty()) {
    if (v.kind != "key" && v.kind != "offsets")
      issue(at(p, "distribution"), "\"distribution\" applies to kinds key and offsets");
    else if (!kDistributions.count(v.distribution))
      issue(at(p, "distribution"), "unknown distribution \"" + v.distribution + "\"");
  }
  const bool real_kind = v.kind == "real" || v.kind == "positive" || v.kind == "nonnegative";
  if (!v.ties.empty() && !real_kind) issue(at(p, "ties"), "\"ties\" applies to real-valued kinds (real, positive, nonnegative)");
  for (size_t i = 0; i < v.ties.size(); ++i)
    if (!is_tie_spread_name(v.ties[i]))
      issue(at(at(p, "ties"), i), "unknown tie spread \"" + v.ties[i] +
                                      "\" (uniform, zipf, all_equal, sorted_runs or reverse_runs)");
  if (!v.ties.empty() && !v.structure.empty()) issue(at(p, "ties"), "\"ties\" and \"structure\" do not combine");
  for (size_t k = 0; k < v.also.size(); ++k) {
    if (v.distribution.empty()) issue(at(p, "also"), "\"also\" needs a \"distribution\" to rotate with");
    else if (!kDistributions.count(v.also[k])) issue(at(at(p, "also"), k), "unknown distribution \"" + v.also[k] + "\"");
  }
  const bool zipf = v.distribution == "zipf" || std::count(v.ties.begin(), v.ties.end(), "zipf") ||
                    std::count(v.also.begin(), v.also.end(), "zipf");
  if (v.alpha) {
    if (!zipf) issue(at(p, "alpha"), "\"alpha\" applies to distribution zipf (or zipf ties or also)");
    else if (!(*v.alpha > 0)) issue(at(p, "alpha"), "zipf alpha must be > 0");
  } else if (zipf) {
    issue(at(p, "alpha"), "distribution zipf needs \"alpha\" (its exponent)");
  }
  // int64_limits puts keys at the ends of int64, outside [low, below): only a key domain of int64
  // can hold them (offsets must stay monotone in [0, total]).
  const bool limits = v.distribution == "int64_limits" || std::count(v.also.begin(), v.also.end(), "int64_limits");
  if (limits && v.kind != "key") issue(at(p, "distribution"), "int64_limits applies to kind key only");
  if (limits && dtypes)
    for (DType d : *dtypes)
      if (d != DType::Int64) issue(at(p, "distribution"), std::string("int64_limits needs dtype int64, not ") + dtype_name(d));
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
      else if (v.kind == "quantizable") ok = dtype_is_floating(d);
      else ok = dtype_is_floating(d) || is_integer_dtype(d);  // real-like kinds: any numeric dtype
      if (!ok) issue(at(p, "kind"), std::string("value kind \"") + v.kind + "\" does not fit dtype " + dtype_name(d));
    }
  }
}

// A quantizable input names the quantizer's scale (a double attribute) and optionally its zero
// point (an int64 attribute); its values are laid on that grid (case.cpp, quantizer_grid_value).
void Linter::check_quantizable(const ValueDomain& v, const std::string& p) {
  auto attr_type = [&](const std::string& name) -> std::string {
    for (const AttrSpec& a : s_.attributes)
      if (a.name == name) return a.type;
    return "";
  };
  if (v.kind != "quantizable") {
    if (!v.scale.empty()) issue(at(p, "scale"), "\"scale\" applies to kind quantizable");
    if (!v.zero_point.empty()) issue(at(p, "zero_point"), "\"zero_point\" applies to kind quantizable");
    return;
  }
  if (v.scale.empty()) issue(at(p, "scale"), "kind quantizable needs \"scale\" (a double attribute)");
  else if (attr_type(v.scale) != "double") issue(at(p, "scale"), "\"" + v.scale + "\" is no double attribute");
  if (!v.zero_point.empty() && attr_type(v.zero_point) != "int64")
    issue(at(p, "zero_point"), "\"" + v.zero_point + "\" is no int64 attribute");
}

// A structure lives in the last two dims of a real-valued matrix; "symmetric" needs them equal
// (the same dim name in every shape alternative), or the projection could not be made.
void Linter::check_structure(const InputSpec& in, const std::string& p) {
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

void Linter::inputs() {
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
      // A per-tensor quantizer's scale and zero point may be attributes (torch's double scale and
      // int64 zero point, dequantize's), the others' are tensor inputs (int8_matmul's scales).
      const AttrSpec* scale_attr = attr(in.quant_scale);
      const AttrSpec* zp_attr = in.quant_zero_point.empty() ? nullptr : attr(in.quant_zero_point);
      if (scale_attr) {
        if (scale_attr->type != "double") issue(at(qp, "scale"), "scale attribute \"" + in.quant_scale + "\" is no double");
        if (in.quant_axis) issue(at(qp, "axis"), "a scale attribute is one scale per tensor: no axis");
      } else if (!input(in.quant_scale) || in.quant_scale == in.name) {
        issue(at(qp, "scale"), "unknown scale input or attribute \"" + in.quant_scale + "\"");
      }
      if (zp_attr) {
        if (zp_attr->type != "int64") issue(at(qp, "zero_point"), "zero-point attribute \"" + in.quant_zero_point + "\" is no int64");
      } else if (!in.quant_zero_point.empty() && (!input(in.quant_zero_point) || in.quant_zero_point == in.name)) {
        issue(at(qp, "zero_point"), "unknown zero-point input or attribute \"" + in.quant_zero_point + "\"");
      }
      for (DType d : in.dtypes)
        if (!is_integer_dtype(d)) issue(at(p, "dtypes"), std::string("quantized input with non-integer dtype ") + dtype_name(d));
      if (in.quant_axis && (*in.quant_axis < -int64_t(max_rank) || *in.quant_axis >= int64_t(max_rank)))
        issue(at(qp, "axis"), "quantization axis out of range");
    } else if (!in.quant_zero_point.empty() || in.quant_axis) {
      issue(at(at(p, "quantization"), "scale"), "quantization needs \"scale\"");
    }
  }
}

bool Linter::type_matches(const AttrValue& v, const std::string& type) const {
  if (type == "int64") return std::holds_alternative<int64_t>(v);
  if (type == "double") return std::holds_alternative<double>(v);
  if (type == "bool") return std::holds_alternative<bool>(v);
  return false;
}

void Linter::check_attr_value(const AttrSpec& a, const AttrValue& v, const std::string& field, const char* what) {
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

void Linter::attributes() {
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
    if (!a.drawn_from.empty()) {
      const InputSpec* in = input(a.drawn_from);
      if (a.type != "double") issue(at(p, "drawn_from"), "drawn_from needs type double");
      if (!in) issue(at(p, "drawn_from"), "unknown input \"" + a.drawn_from + "\"");
      else if (is_integer_value_kind(in->values.kind) || !in->values.structure.empty() ||
               std::none_of(in->dtypes.begin(), in->dtypes.end(), dtype_is_floating))
        issue(at(p, "drawn_from"), "drawn_from names a floating input of a real-valued kind without structure");
      if (a.min || a.max || !a.values.empty())
        issue(at(p, "drawn_from"), "an attribute drawn from an input's values has no min, max or values");
    }
    if (!a.size_of.empty()) {
      if (a.type != "int64") issue(at(p, "size_of"), "size_of needs type int64");
      if (!s_.dims.count(a.size_of)) issue(at(p, "size_of"), "unknown dim \"" + a.size_of + "\"");
      if (!a.dim_of.empty()) issue(at(p, "size_of"), "an attribute is a dim index (dim_of) or a dim's size (size_of), not both");
      if (!a.values.empty()) issue(at(p, "values"), "a size_of attribute takes its dim's sizes: no \"values\"");
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

void Linter::error_inputs() {
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

}  // namespace gauntlet::schema_internal
