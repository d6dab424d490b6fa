// The sections of a schema document (dims, inputs, attributes, outputs, tolerances, error inputs,
// ...) read into an OpSchema, on top of JsonFields' typed field access.
#include <algorithm>

#include "schema_reader.h"

namespace gauntlet::schema_internal {
namespace {

// Reads one schema document, recording every structural issue.
class Reader : public JsonFields {
 public:
  using JsonFields::JsonFields;

  DimDomain read_dim(const json& j, const std::string& p) {
    DimDomain d;
    if (!want_object(j, p)) return d;
    check_keys(j, p, {"min", "max", "typical", "hazards", "zero_allowed", "notes"});
    if (const json* v = field(j, "min", p, true))
      if (auto x = get_int(*v, at(p, "min"))) d.min = *x;
    if (const json* v = field(j, "max", p, true))
      if (auto x = get_int(*v, at(p, "max"))) d.max = *x;
    for (const char* list : {"typical", "hazards"}) {
      const json* v = field(j, list, p, std::string(list) == "typical");
      if (!v) continue;
      std::string lp = at(p, list);
      if (!want_array(*v, lp)) continue;
      auto& out = std::string(list) == "typical" ? d.typical : d.hazards;
      for (size_t i = 0; i < v->size(); ++i)
        if (auto x = get_int((*v)[i], at(lp, i))) out.push_back(*x);
    }
    d.zero_allowed = get_bool(j, "zero_allowed", p, false);
    get_string(j, "notes", p, false);
    return d;
  }

  ValueDomain read_values(const json& j, const std::string& p) {
    ValueDomain v;
    if (!want_object(j, p)) return v;
    check_keys(j, p, {"kind", "low", "below", "distribution", "also", "alpha", "sorted", "total", "structure", "ties", "scale",
                      "zero_point", "notes"});
    v.kind = get_string(j, "kind", p, true, "real");
    v.low = get_expr_field(j, "low", p, false, "0");
    v.below = get_expr_field(j, "below", p, false);
    v.distribution = get_string(j, "distribution", p, false);
    v.also = get_string_list(j, "also", p, false);
    if (const json* a = field(j, "alpha", p, false)) v.alpha = get_number(*a, at(p, "alpha"));
    v.sorted = get_bool(j, "sorted", p, false);
    v.total = get_expr_field(j, "total", p, false);
    v.structure = get_string(j, "structure", p, false);
    if (j.contains("ties")) v.ties = get_string_list(j, "ties", p, false);
    v.scale = get_string(j, "scale", p, false);
    v.zero_point = get_string(j, "zero_point", p, false);
    get_string(j, "notes", p, false);
    return v;
  }

  std::vector<std::string> read_shape_pattern(const json& j, const std::string& p) {
    std::vector<std::string> r;
    if (!want_array(j, p)) return r;
    for (size_t i = 0; i < j.size(); ++i) r.push_back(get_expr(j[i], at(p, i)));
    return r;
  }

  InputSpec read_input(const json& j, const std::string& p) {
    InputSpec in;
    if (!want_object(j, p)) return in;
    check_keys(j, p, {"name", "shapes", "dtypes", "same_dtype_as", "broadcast_to", "values", "layouts",
                      "quantization", "notes"});
    in.name = get_string(j, "name", p, true);
    if (const json* s = field(j, "shapes", p, true)) {
      std::string sp = at(p, "shapes");
      if (want_array(*s, sp))
        for (size_t i = 0; i < s->size(); ++i) in.shapes.push_back(read_shape_pattern((*s)[i], at(sp, i)));
    }
    in.same_dtype_as = get_string(j, "same_dtype_as", p, false);
    if (const json* d = field(j, "dtypes", p, in.same_dtype_as.empty())) {
      std::string dp = at(p, "dtypes");
      if (want_array(*d, dp))
        for (size_t i = 0; i < d->size(); ++i)
          if (auto t = get_dtype((*d)[i], at(dp, i))) in.dtypes.push_back(*t);
    }
    in.broadcast_to = get_string(j, "broadcast_to", p, false);
    if (const json* v = field(j, "values", p, false)) in.values = read_values(*v, at(p, "values"));
    in.layouts = get_string_list(j, "layouts", p, true);
    if (const json* q = field(j, "quantization", p, false)) {
      std::string qp = at(p, "quantization");
      if (want_object(*q, qp)) {
        check_keys(*q, qp, {"scale", "zero_point", "axis", "notes"});
        in.quant_scale = get_string(*q, "scale", qp, true);
        in.quant_zero_point = get_string(*q, "zero_point", qp, false);
        if (const json* a = field(*q, "axis", qp, false)) in.quant_axis = get_int(*a, at(qp, "axis"));
        get_string(*q, "notes", qp, false);
      }
    }
    get_string(j, "notes", p, false);
    return in;
  }

  std::optional<AttrValue> read_attr_value(const json& j, const std::string& type, const std::string& p) {
    if (type == "int64") {
      if (auto x = get_int(j, p)) return AttrValue{*x};
      return std::nullopt;
    }
    if (type == "double") {
      if (auto x = get_number(j, p)) return AttrValue{*x};
      return std::nullopt;
    }
    if (type == "bool") {
      if (j.is_boolean()) return AttrValue{j.get<bool>()};
      issue(p, std::string("expected a boolean, got ") + json_type(j));
      return std::nullopt;
    }
    return std::nullopt;  // unknown type reported by the caller
  }

  AttrSpec read_attr(const json& j, const std::string& p) {
    AttrSpec a;
    if (!want_object(j, p)) return a;
    check_keys(j, p, {"name", "type", "default", "values", "min", "max", "dim_of", "drawn_from", "size_of", "notes"});
    a.name = get_string(j, "name", p, true);
    a.type = get_string(j, "type", p, true);
    if (!a.type.empty() && a.type != "int64" && a.type != "double" && a.type != "bool")
      issue(at(p, "type"), "unknown attribute type \"" + a.type + "\" (int64, double or bool)");
    if (const json* d = field(j, "default", p, true))
      if (auto v = read_attr_value(*d, a.type, at(p, "default"))) a.default_value = *v;
    if (const json* vs = field(j, "values", p, false)) {
      std::string vp = at(p, "values");
      if (want_array(*vs, vp))
        for (size_t i = 0; i < vs->size(); ++i)
          if (auto v = read_attr_value((*vs)[i], a.type, at(vp, i))) a.values.push_back(*v);
    }
    if (const json* m = field(j, "min", p, false)) a.min = get_number(*m, at(p, "min"));
    if (const json* m = field(j, "max", p, false)) a.max = get_number(*m, at(p, "max"));
    a.dim_of = get_string(j, "dim_of", p, false);
    a.drawn_from = get_string(j, "drawn_from", p, false);
    a.size_of = get_string(j, "size_of", p, false);
    get_string(j, "notes", p, false);
    return a;
  }

  OutputSpec read_output(const json& j, const std::string& p) {
    OutputSpec o;
    if (!want_object(j, p)) return o;
    check_keys(j, p, {"name", "shape", "dtype", "equivalence", "tie_key", "aligned_with", "strict_when",
                      "size_rule", "max_size", "notes"});
    o.name = get_string(j, "name", p, true);
    if (const json* s = field(j, "shape", p, true)) {
      if (s->is_string()) o.shape_rule = s->get<std::string>();
      else if (s->is_array()) o.dims = read_shape_pattern(*s, at(p, "shape"));
      else issue(at(p, "shape"), std::string("expected a shape rule string or a list of dims, got ") + json_type(*s));
    }
    o.dtype = get_string(j, "dtype", p, true);
    o.equivalence = get_string(j, "equivalence", p, false, "elementwise");
    o.tie_key = get_string(j, "tie_key", p, false);
    o.aligned_with = get_string(j, "aligned_with", p, false);
    o.strict_when = get_string(j, "strict_when", p, false);
    o.size_rule = get_string(j, "size_rule", p, false, "static");
    o.max_size = get_expr_field(j, "max_size", p, false);
    get_string(j, "notes", p, false);
    return o;
  }

  Tolerance read_tolerance(const json& j, const std::string& p) {
    Tolerance t;
    if (!want_object(j, p)) return t;
    check_keys(j, p, {"mode", "ulps", "c", "ceiling_c", "accumulator", "factor", "reason", "notes"});
    t.mode = get_string(j, "mode", p, true, "exact");
    for (auto [key, dst] : {std::pair<const char*, double*>{"ulps", &t.ulps}, {"c", &t.c},
                            {"ceiling_c", &t.ceiling_c}, {"factor", &t.factor}})
      if (const json* v = field(j, key, p, false))
        if (auto x = get_number(*v, at(p, key))) *dst = *x;
    t.accumulator = get_string(j, "accumulator", p, false, "float32");
    t.reason = get_string(j, "reason", p, true);
    get_string(j, "notes", p, false);
    return t;
  }

  ErrorInput read_error_input(const json& j, const std::string& p, const std::vector<AttrSpec>& attrs) {
    ErrorInput e;
    if (!want_object(j, p)) return e;
    check_keys(j, p, {"description", "shapes", "values", "dtypes", "attrs", "constraints", "notes"});
    e.description = get_string(j, "description", p, true);
    if (const json* s = field(j, "shapes", p, false)) {
      std::string sp = at(p, "shapes");
      if (want_object(*s, sp))
        for (auto it = s->begin(); it != s->end(); ++it)
          e.shape_overrides[it.key()] = read_shape_pattern(it.value(), at(sp, it.key()));
    }
    if (const json* v = field(j, "values", p, false)) {
      std::string vp = at(p, "values");
      if (want_object(*v, vp))
        for (auto it = v->begin(); it != v->end(); ++it)
          e.value_overrides[it.key()] = read_values(it.value(), at(vp, it.key()));
    }
    if (const json* d = field(j, "dtypes", p, false)) {
      std::string dp = at(p, "dtypes");
      if (want_object(*d, dp))
        for (auto it = d->begin(); it != d->end(); ++it)
          if (auto t = get_dtype(it.value(), at(dp, it.key()))) e.dtype_overrides[it.key()] = *t;
    }
    if (const json* a = field(j, "attrs", p, false)) {
      std::string ap = at(p, "attrs");
      if (want_object(*a, ap))
        for (auto it = a->begin(); it != a->end(); ++it) {
          auto spec = std::find_if(attrs.begin(), attrs.end(), [&](const AttrSpec& s) { return s.name == it.key(); });
          if (spec == attrs.end()) {
            issue(at(ap, it.key()), "unknown attribute \"" + it.key() + "\"");
            continue;
          }
          if (auto v = read_attr_value(it.value(), spec->type, at(ap, it.key()))) e.attr_overrides[it.key()] = *v;
        }
    }
    e.constraints = get_string_list(j, "constraints", p, false, true);
    get_string(j, "notes", p, false);
    if (!j.contains("shapes") && !j.contains("values") && !j.contains("dtypes") && !j.contains("attrs"))
      issue(p, "an error input must override at least one of shapes, values, dtypes, attrs");
    return e;
  }

  std::optional<OpSchema> read(const json& root) {
    OpSchema s;
    s.source_file = file_;
    const std::string r = "";
    if (!want_object(root, r)) return std::nullopt;
    check_keys(root, r,
               {"schema_version", "name", "semantics", "dims", "constraints", "attr_constraints", "max_numel",
                "inputs", "attributes", "outputs", "oracle", "tolerance", "nan_inf", "determinism",
                "determinism_notes", "reduction", "cost", "error_inputs", "error_inputs_note", "forbidden_ops",
                "coupled_dims", "notes"});
    if (const json* v = field(root, "schema_version", r, true))
      if (auto x = get_int(*v, "/schema_version")) {
        s.schema_version = static_cast<int>(*x);
        if (*x != 1) issue("/schema_version", "unsupported schema_version " + std::to_string(*x) + " (this gauntlet reads 1)");
      }
    s.name = get_string(root, "name", r, true);
    s.semantics = get_string(root, "semantics", r, true);
    if (const json* d = field(root, "dims", r, true))
      if (want_object(*d, "/dims"))
        for (auto it = d->begin(); it != d->end(); ++it) s.dims[it.key()] = read_dim(it.value(), at("/dims", it.key()));
    s.constraints = get_string_list(root, "constraints", r, false, true);
    s.attr_constraints = get_string_list(root, "attr_constraints", r, false);
    if (root.contains("coupled_dims")) s.coupled_dims = get_string_list(root, "coupled_dims", r, false);
    if (const json* m = field(root, "max_numel", r, false))
      if (auto x = get_int(*m, "/max_numel")) s.max_numel = *x;
    if (const json* ins = field(root, "inputs", r, true))
      if (want_array(*ins, "/inputs"))
        for (size_t i = 0; i < ins->size(); ++i) s.inputs.push_back(read_input((*ins)[i], at("/inputs", i)));
    if (const json* as = field(root, "attributes", r, true))
      if (want_array(*as, "/attributes"))
        for (size_t i = 0; i < as->size(); ++i) s.attributes.push_back(read_attr((*as)[i], at("/attributes", i)));
    if (const json* os = field(root, "outputs", r, true))
      if (want_array(*os, "/outputs"))
        for (size_t i = 0; i < os->size(); ++i) s.outputs.push_back(read_output((*os)[i], at("/outputs", i)));
    s.oracle = get_string(root, "oracle", r, true);
    if (const json* t = field(root, "tolerance", r, true))
      if (want_object(*t, "/tolerance"))
        for (auto it = t->begin(); it != t->end(); ++it) {
          std::string tp = at("/tolerance", it.key());
          auto d = dtype_from_name(it.key());
          if (!d) {
            issue(tp, "unknown dtype \"" + it.key() + "\"");
            continue;
          }
          s.tolerance[*d] = read_tolerance(it.value(), tp);
        }
    if (const json* n = field(root, "nan_inf", r, true))
      if (want_object(*n, "/nan_inf")) {
        check_keys(*n, "/nan_inf", {"policy", "inputs", "notes"});
        s.nan_inf_inputs = get_string_list(*n, "inputs", "/nan_inf", false);
        s.nan_inf = get_string(*n, "policy", "/nan_inf", true, "propagate");
        s.nan_inf_notes = get_string(*n, "notes", "/nan_inf", false);
      }
    s.determinism = get_string(root, "determinism", r, true, "bitwise");
    s.determinism_notes = get_string(root, "determinism_notes", r, false);
    if (const json* red = field(root, "reduction", r, true)) {
      if (!red->is_null() && want_object(*red, "/reduction")) {
        check_keys(*red, "/reduction", {"dim_attr", "K", "identity", "notes"});
        ReductionInfo ri;
        ri.dim_attr = get_string(*red, "dim_attr", "/reduction", false);
        ri.K = get_expr_field(*red, "K", "/reduction", true);
        ri.identity = get_string(*red, "identity", "/reduction", true);
        get_string(*red, "notes", "/reduction", false);
        s.reduction = ri;
      }
    }
    if (const json* c = field(root, "cost", r, true))
      if (want_object(*c, "/cost")) {
        check_keys(*c, "/cost", {"flops", "bytes", "notes"});
        s.flops = get_expr_field(*c, "flops", "/cost", true);
        s.bytes = get_expr_field(*c, "bytes", "/cost", true);
        get_string(*c, "notes", "/cost", false);
      }
    if (const json* es = field(root, "error_inputs", r, true))
      if (want_array(*es, "/error_inputs"))
        for (size_t i = 0; i < es->size(); ++i)
          s.error_inputs.push_back(read_error_input((*es)[i], at("/error_inputs", i), s.attributes));
    s.error_inputs_note = get_string(root, "error_inputs_note", r, false);
    s.forbidden_ops = get_string_list(root, "forbidden_ops", r, true);
    get_string(root, "notes", r, false);
    if (failed_) return std::nullopt;
    return s;
  }
};

}  // namespace

std::optional<OpSchema> read_schema(const json& root, const std::string& file, std::vector<SchemaIssue>* issues) {
  return Reader(file, issues).read(root);
}

}  // namespace gauntlet::schema_internal
