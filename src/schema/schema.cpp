// Op schema loading: opschemas/<op>.json -> OpSchema. The loader is strict about structure
// (JSON syntax, field types, unknown keys, required keys, dtype names); every problem becomes a
// SchemaIssue naming the file and the field as a JSON pointer. Semantic checks live in
// schema_lint.cpp. The format is documented in docs/schema-format.md.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "gauntlet/schema/schema.h"

#ifndef GAUNTLET_SOURCE_DIR
#define GAUNTLET_SOURCE_DIR "."
#endif

namespace gauntlet {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

std::string escape_pointer_token(const std::string& t) {
  std::string r;
  for (char c : t) {
    if (c == '~') r += "~0";
    else if (c == '/') r += "~1";
    else r += c;
  }
  return r;
}

std::string at(const std::string& base, const std::string& key) { return base + "/" + escape_pointer_token(key); }
std::string at(const std::string& base, size_t i) { return base + "/" + std::to_string(i); }

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

const char* json_type(const json& j) {
  if (j.is_null()) return "null";
  if (j.is_boolean()) return "a boolean";
  if (j.is_number_integer() || j.is_number_unsigned()) return "an integer";
  if (j.is_number()) return "a number";
  if (j.is_string()) return "a string";
  if (j.is_array()) return "an array";
  return "an object";
}

// Reads one schema document, recording every structural issue.
class Reader {
 public:
  Reader(std::string file, std::vector<SchemaIssue>* issues) : file_(std::move(file)), issues_(issues) {}
  bool failed() const { return failed_; }

  void issue(const std::string& field, const std::string& msg) {
    failed_ = true;
    if (issues_) issues_->push_back({file_, field, msg});
  }

  // Reports keys of `o` not in `allowed`, with a "did you mean" hint for near misses.
  void check_keys(const json& o, const std::string& path, std::initializer_list<const char*> allowed) {
    for (auto it = o.begin(); it != o.end(); ++it) {
      const std::string& k = it.key();
      bool ok = false;
      for (const char* a : allowed) ok = ok || k == a;
      if (ok) continue;
      std::string best;
      size_t bestd = 3;
      for (const char* a : allowed) {
        size_t d = edit_distance(k, a);
        if (d < bestd) {
          bestd = d;
          best = a;
        }
      }
      issue(at(path, k), "unknown key \"" + k + "\"" + (best.empty() ? "" : " (did you mean \"" + best + "\"?)"));
    }
  }

  const json* field(const json& o, const char* key, const std::string& path, bool required) {
    auto it = o.find(key);
    if (it == o.end()) {
      if (required) issue(at(path, key), std::string("missing required field \"") + key + "\"");
      return nullptr;
    }
    return &*it;
  }

  bool want_object(const json& j, const std::string& path) {
    if (j.is_object()) return true;
    issue(path, std::string("expected an object, got ") + json_type(j));
    return false;
  }
  bool want_array(const json& j, const std::string& path) {
    if (j.is_array()) return true;
    issue(path, std::string("expected an array, got ") + json_type(j));
    return false;
  }

  std::string get_string(const json& o, const char* key, const std::string& path, bool required,
                         std::string dflt = "") {
    const json* j = field(o, key, path, required);
    if (!j) return dflt;
    if (!j->is_string()) {
      issue(at(path, key), std::string("expected a string, got ") + json_type(*j));
      return dflt;
    }
    return j->get<std::string>();
  }
  // A JSON string or integer holding an expression (integers are written back as text).
  std::string get_expr(const json& j, const std::string& path) {
    if (j.is_string()) return j.get<std::string>();
    if (j.is_number_integer() || j.is_number_unsigned()) return j.dump();
    issue(path, std::string("expected an expression (string or integer), got ") + json_type(j));
    return "";
  }
  std::string get_expr_field(const json& o, const char* key, const std::string& path, bool required,
                             std::string dflt = "") {
    const json* j = field(o, key, path, required);
    if (!j) return dflt;
    return get_expr(*j, at(path, key));
  }
  std::optional<int64_t> get_int(const json& j, const std::string& path) {
    if (j.is_number_integer() || j.is_number_unsigned()) {
      if (j.is_number_unsigned() && j.get<uint64_t>() > uint64_t(INT64_MAX)) {
        issue(path, "integer too large");
        return std::nullopt;
      }
      return j.get<int64_t>();
    }
    issue(path, std::string("expected an integer, got ") + json_type(j));
    return std::nullopt;
  }
  std::optional<double> get_number(const json& j, const std::string& path) {
    if (j.is_number()) return j.get<double>();
    issue(path, std::string("expected a number, got ") + json_type(j));
    return std::nullopt;
  }
  bool get_bool(const json& o, const char* key, const std::string& path, bool dflt) {
    const json* j = field(o, key, path, false);
    if (!j) return dflt;
    if (!j->is_boolean()) {
      issue(at(path, key), std::string("expected a boolean, got ") + json_type(*j));
      return dflt;
    }
    return j->get<bool>();
  }
  std::vector<std::string> get_string_list(const json& o, const char* key, const std::string& path,
                                           bool required, bool exprs = false) {
    std::vector<std::string> r;
    const json* j = field(o, key, path, required);
    if (!j) return r;
    std::string p = at(path, key);
    if (!want_array(*j, p)) return r;
    for (size_t i = 0; i < j->size(); ++i) {
      const json& e = (*j)[i];
      if (exprs) {
        r.push_back(get_expr(e, at(p, i)));
      } else if (e.is_string()) {
        r.push_back(e.get<std::string>());
      } else {
        issue(at(p, i), std::string("expected a string, got ") + json_type(e));
      }
    }
    return r;
  }
  std::optional<DType> get_dtype(const json& j, const std::string& path) {
    if (!j.is_string()) {
      issue(path, std::string("expected a dtype name, got ") + json_type(j));
      return std::nullopt;
    }
    auto d = dtype_from_name(j.get<std::string>());
    if (!d) issue(path, "unknown dtype \"" + j.get<std::string>() + "\"");
    return d;
  }
  std::vector<std::string> get_notes(const json& o, const std::string& path) {
    return {get_string(o, "notes", path, false)};
  }

  // ---- sections ----

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
    check_keys(j, p, {"kind", "low", "below", "distribution", "alpha", "sorted", "total", "structure", "notes"});
    v.kind = get_string(j, "kind", p, true, "real");
    v.low = get_expr_field(j, "low", p, false, "0");
    v.below = get_expr_field(j, "below", p, false);
    v.distribution = get_string(j, "distribution", p, false);
    if (const json* a = field(j, "alpha", p, false)) v.alpha = get_number(*a, at(p, "alpha"));
    v.sorted = get_bool(j, "sorted", p, false);
    v.total = get_expr_field(j, "total", p, false);
    v.structure = get_string(j, "structure", p, false);
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
    check_keys(j, p, {"name", "type", "default", "values", "min", "max", "dim_of", "notes"});
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
                "notes"});
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
        check_keys(*n, "/nan_inf", {"policy", "notes"});
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

 private:
  std::string file_;
  std::vector<SchemaIssue>* issues_;
  bool failed_ = false;
};

}  // namespace

const InputSpec* OpSchema::input(const std::string& n) const {
  for (const auto& i : inputs)
    if (i.name == n) return &i;
  return nullptr;
}

const AttrSpec* OpSchema::attribute(const std::string& n) const {
  for (const auto& a : attributes)
    if (a.name == n) return &a;
  return nullptr;
}

std::string OpSchema::broken_attr_constraint(const std::map<std::string, double>& values, std::string* why) const {
  for (const std::string& c : attr_constraints) {
    std::string error;
    auto r = eval_double_expr(c, values, &error);
    if (r && *r != 0) continue;
    if (why) *why = r ? "" : error;
    return c;
  }
  return "";
}

std::vector<DType> OpSchema::float_dtypes() const {
  std::vector<DType> r;
  if (inputs.empty()) return r;
  // Follow same_dtype_as (bounded, in case of a cycle that lint reports).
  const InputSpec* in = &inputs[0];
  for (int hop = 0; hop < 16 && in && in->dtypes.empty() && !in->same_dtype_as.empty(); ++hop)
    in = input(in->same_dtype_as);
  if (!in) return r;
  for (DType d : in->dtypes)
    if (dtype_is_floating(d)) r.push_back(d);
  return r;
}

std::optional<OpSchema> load_schema_file(const std::string& path, std::vector<SchemaIssue>* issues) {
  auto add = [&](const std::string& field, const std::string& msg) {
    if (issues) issues->push_back({path, field, msg});
  };
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    add("", "cannot open file");
    return std::nullopt;
  }
  std::stringstream buf;
  buf << f.rdbuf();
  std::string text = buf.str();
  json root;
  try {
    root = json::parse(text);
  } catch (const json::parse_error& e) {
    // Turn the byte offset into line:column.
    size_t off = std::min<size_t>(e.byte == 0 ? 0 : e.byte - 1, text.size());
    size_t line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(off), '\n');
    size_t nl = text.rfind('\n', off == 0 ? 0 : off - 1);
    size_t col = (nl == std::string::npos || off == 0) ? off + 1 : off - nl;
    add("", "invalid JSON at line " + std::to_string(line) + ", column " + std::to_string(col) + ": " + e.what());
    return std::nullopt;
  }
  Reader r(path, issues);
  auto s = r.read(root);
  if (s) {
    std::string stem = fs::path(path).stem().string();
    if (s->name != stem) {
      add("/name", "name \"" + s->name + "\" differs from the file name \"" + stem + ".json\"");
      return std::nullopt;
    }
  }
  return s;
}

std::vector<OpSchema> load_schema_dir(const std::string& dir, std::vector<SchemaIssue>* issues) {
  std::vector<std::string> files;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file() && it->path().extension() == ".json") files.push_back(it->path().string());
  if (ec && issues) issues->push_back({dir, "", "cannot read schema directory: " + ec.message()});
  std::sort(files.begin(), files.end());
  std::vector<OpSchema> out;
  std::set<std::string> seen;
  for (const auto& f : files) {
    auto s = load_schema_file(f, issues);
    if (!s) continue;
    if (!seen.insert(s->name).second) {
      if (issues) issues->push_back({f, "/name", "duplicate op name \"" + s->name + "\""});
      continue;
    }
    out.push_back(std::move(*s));
  }
  return out;
}

std::vector<SchemaIssue> lint_schema_file(const std::string& path, const std::vector<std::string>& known_oracles) {
  std::vector<SchemaIssue> issues;
  auto s = load_schema_file(path, &issues);
  if (s) {
    auto more = lint_schema(*s, known_oracles);
    issues.insert(issues.end(), more.begin(), more.end());
  }
  return issues;
}

bool is_structure_name(const std::string& s) {
  return s == "lower-triangular" || s == "upper-triangular" || s == "symmetric" || s == "diagonal";
}

std::string default_schema_dir() {
  if (const char* env = std::getenv("GAUNTLET_SCHEMAS"); env && *env) return env;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path cand = exe.parent_path().parent_path() / "opschemas";
    if (fs::is_directory(cand, ec)) return cand.string();
  }
  return std::string(GAUNTLET_SOURCE_DIR) + "/opschemas";
}

}  // namespace gauntlet
