// Lint rules for what an op produces and how it is judged: outputs (shape rules, dtypes,
// equivalence), oracle and tolerances, the NaN/Inf and determinism policies, reduction and cost.
#include <algorithm>
#include <set>
#include <sstream>

#include "lint_rules.h"

namespace gauntlet::schema_internal {
namespace {

const std::set<std::string> kToleranceModes = {"exact", "ulp", "reduction", "relative-to-library", "quantize-rounding"};
const std::set<std::string> kNanInf = {"propagate", "ignore", "custom"};
const std::set<std::string> kDeterminism = {"bitwise", "tolerance", "equivalence"};
const std::set<std::string> kEquivalence = {"elementwise", "permutation_of_ties", "set", "multiset"};
const std::set<std::string> kIdentity = {"0", "1", "-inf", "inf", "nan", "error", "empty", "n/a"};

}  // namespace

void Linter::outputs() {
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

void Linter::oracle_and_tolerance() {
  if (s_.oracle.empty()) issue("/oracle", "missing oracle id");
  else if (!oracles_.empty() && std::find(oracles_.begin(), oracles_.end(), s_.oracle) == oracles_.end())
    issue("/oracle", "unknown oracle id \"" + s_.oracle + "\"");
  // Keyed by the case dtypes (OpSchema::case_dtypes: the first input that allows a floating dtype).
  const InputSpec* case_input = s_.case_dtype_input();
  const std::string case_input_name = case_input ? case_input->name : "the first input";
  const std::vector<DType> case_dtypes = s_.case_dtypes();
  for (DType d : case_dtypes)  // integer case dtypes without an entry are judged exactly
    if (dtype_is_floating(d) && !s_.tolerance.count(d))
      issue(at("/tolerance", dtype_name(d)), std::string("missing tolerance for ") + dtype_name(d) + " (" +
                                                 case_input_name + ", whose dtype is the case's, allows it)");
  for (const auto& [d, t] : s_.tolerance) {
    std::string p = at("/tolerance", dtype_name(d));
    if (std::find(case_dtypes.begin(), case_dtypes.end(), d) == case_dtypes.end())
      issue(p, std::string("tolerance for ") + dtype_name(d) + ", which is no case dtype (" + case_input_name +
                   ", whose dtype is the case's, does not allow it)");
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

void Linter::semantics() {
  if (!kNanInf.count(s_.nan_inf)) issue("/nan_inf/policy", "unknown policy \"" + s_.nan_inf + "\" (propagate, ignore, custom)");
  if (s_.nan_inf == "custom" && s_.nan_inf_notes.empty()) issue("/nan_inf/notes", "policy custom needs notes");
  for (size_t i = 0; i < s_.nan_inf_inputs.size(); ++i) {
    const std::string& v = s_.nan_inf_inputs[i];
    if (v != "nan" && v != "+inf" && v != "-inf")
      issue(at("/nan_inf/inputs", i), "unknown special value \"" + v + "\" (nan, +inf, -inf)");
  }
  if (!s_.nan_inf_inputs.empty() && s_.nan_inf_notes.empty())
    issue("/nan_inf/notes", "special inputs left out need notes (why the op has no answer for them)");
  if (!kDeterminism.count(s_.determinism))
    issue("/determinism", "unknown determinism \"" + s_.determinism + "\" (bitwise, tolerance, equivalence)");
  if (s_.determinism != "bitwise" && s_.determinism_notes.empty())
    issue("/determinism_notes", "a non-bitwise determinism needs determinism_notes (where the nondeterminism comes from)");
  if (s_.determinism == "equivalence" &&
      std::none_of(s_.outputs.begin(), s_.outputs.end(), [](const OutputSpec& o) { return o.equivalence != "elementwise"; }))
    issue("/determinism", "determinism equivalence needs an output whose equivalence is not elementwise");
}

void Linter::reduction_and_cost() {
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

}  // namespace gauntlet::schema_internal
