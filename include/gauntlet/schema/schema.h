// Op schemas (opschemas/*.json): the contract of an op, modeled on PyTorch's OpInfo. See docs/schema-format.md.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gauntlet/common/types.h"

namespace gauntlet {

// Integer expressions over dim names and int attributes: + - * / (floor division) % ( ), integer
// literals, identifiers, comparisons < <= > >= == != (yield 0/1), && ||, min(a,b), max(a,b).
// Used for shapes, constraints, K, and cost models. Identifiers: dim names, int/bool attrs,
// "elem_size" (bytes per element of the first input's dtype).
struct Expr {
  std::string text;
};
// Evaluates `e` with `vars`; returns nullopt and sets *error on an unknown name or a syntax error.
std::optional<int64_t> eval_expr(const std::string& e, const std::map<std::string, int64_t>& vars,
                                 std::string* error);
// Names used by an expression (for lint), or nullopt with *error on syntax errors.
// Input names given to size()/numel()/rank() are not included (see expr_refs).
std::optional<std::vector<std::string>> expr_names(const std::string& e, std::string* error);

// Concrete input shapes, by input name, for the shape functions of the expression language:
//   size(x, d)  extent of input x along dim d (d any expression, e.g. an int64 dim attribute;
//               negative d counts from the end, as in PyTorch); out of range is an error
//   numel(x)    number of elements of x;   rank(x)   number of dims of x
// The reduction K of softmax-like ops is written "size(x,dim)".
using ShapeMap = std::map<std::string, std::vector<int64_t>>;
std::optional<int64_t> eval_expr(const std::string& e, const std::map<std::string, int64_t>& vars,
                                 const ShapeMap& shapes, std::string* error);

// Same grammar evaluated in double (true division, decimal literals such as 1e-5, no %, no shape
// functions): the schema's "attr_constraints" over double/int/bool attributes, e.g. "lo <= hi".
std::optional<double> eval_double_expr(const std::string& e, const std::map<std::string, double>& vars,
                                       std::string* error);

// Everything an expression refers to: variable names, and input names used by shape functions.
struct ExprRefs {
  std::vector<std::string> names;   // dims, attributes, elem_size (sorted, unique)
  std::vector<std::string> inputs;  // first arguments of size()/numel()/rank() (sorted, unique)
};
std::optional<ExprRefs> expr_refs(const std::string& e, std::string* error);

struct DimDomain {
  int64_t min = 1;
  int64_t max = 1;
  std::vector<int64_t> typical;  // sizes the accuracy gate uses
  std::vector<int64_t> hazards;  // tile-hazard sizes the shapes gate adds (e.g. 127, 129)
  bool zero_allowed = false;     // size 0 is inside the domain
};

// Value domain of an input tensor.
struct ValueDomain {
  // "real" | "positive" | "nonnegative" | "index" | "integer" | "bool" | "key" | "offsets" |
  // "quantizable" (real values laid on the grid of a quantizer's scale and zero point)
  std::string kind = "real";
  std::string below;          // index/integer/key: values in [low, below), an Expr
  std::string low = "0";      // index/integer/key: lower bound Expr
  // kind == "key" (group-by/join keys) or "offsets": how values are spread:
  // "uniform" | "zipf" | "all_equal" | "all_distinct" | "sorted_runs"; empty means uniform.
  std::string distribution;
  // More distributions the cases rotate through with `distribution` (each case takes one, by its
  // seed): group-by keys must meet one huge group, all-distinct keys and empty groups alike.
  std::vector<std::string> also;
  std::optional<double> alpha;  // zipf exponent (> 0)
  bool sorted = false;          // key: values come sorted ascending (segmented inputs)
  std::string total;            // kind == "offsets": last offset (length of the segmented input), Expr
  // Structure over the last two dims: "" (none) | "lower-triangular" | "upper-triangular" |
  // "symmetric" | "diagonal" (a KernelBench problem whose get_inputs() builds such matrices).
  std::string structure;
  // Real-valued kinds: spreads of tied values (docs/schema-format.md, "ties"). Non-empty: every
  // case draws a pool of about n/4 values from its distribution and fills the tensor from the pool
  // with one of these spreads ("uniform", "zipf" (needs alpha), "all_equal", "sorted_runs",
  // "reverse_runs"), chosen by the case's seed: many equal values (a sort's stability, ties).
  std::vector<std::string> ties;
  // kind == "quantizable": the double attribute holding the quantizer's scale and the int64 one
  // holding its zero point ("" none); `low`/`below` are the quantized range ([-128, 128) for int8).
  std::string scale;
  std::string zero_point;
};

// The spreads a real value domain's "ties" may list (integer_spread.h's, and "reverse_runs").
bool is_tie_spread_name(const std::string& s);

// Whether a value kind draws integers (index, integer, key, bool, offsets) rather than real values:
// the gates' real distributions (subnormals, specials, accumulation patterns) never fill those.
bool is_integer_value_kind(const std::string& kind);

// Whether `s` names a value structure (schema values.structure, a manifest's "structure"); "" is none.
bool is_structure_name(const std::string& s);
inline constexpr const char* kStructureNames = "lower-triangular, upper-triangular, symmetric or diagonal";

struct InputSpec {
  std::string name;
  // Alternatives of shape patterns; each pattern is a list of dim Exprs (usually plain dim names,
  // or integer literals). One alternative is chosen per case.
  std::vector<std::vector<std::string>> shapes;
  std::string broadcast_to;         // non-empty: shapes are generated broadcastable to that input
  std::vector<DType> dtypes;        // allowed dtypes (empty when same_dtype_as is set)
  std::string same_dtype_as;        // dtype follows another input
  ValueDomain values;
  std::vector<std::string> layouts;  // allowed: contiguous, transposed, strided, offset, expanded, channels_last
  // Quantized integer inputs (dtype int8/uint8): real value = (q - zero_point) * scale.
  std::string quant_scale;              // the input holding the scale(s), or a double attribute; empty: not quantized
  std::string quant_zero_point;         // the zero-point input, or an int64 attribute; empty: zero point 0
  std::optional<int64_t> quant_axis;    // per-channel axis; absent: per-tensor
};

struct AttrSpec {
  std::string name;
  std::string type;             // "int64" | "double" | "bool"
  AttrValue default_value;
  std::vector<AttrValue> values;  // explicit choices (may be empty)
  std::optional<double> min, max;  // numeric range (inclusive)
  std::string dim_of;             // int64 dim attribute: valid dims of this input (-rank..rank-1)
  // double attribute: unless the manifest fixes it, every case takes one of this floating input's
  // own values, at a position the case's seed picks (a filter's threshold lies inside the data
  // whatever the distribution's scale or sign; docs/schema-format.md, "drawn_from").
  std::string drawn_from;
  // int64 attribute that is a dim's size: every case sets it to that dim's extent (group_by_sum's
  // num_groups is G, the keys' range and the output's length), so the gates' sizes reach it.
  std::string size_of;
};

struct OutputSpec {
  std::string name;
  // Shape rule: "same:x", "reduce:x:dim" (x with dim attr removed), "scalar", "broadcast:a,b",
  // or explicit dims (list of Exprs) in `dims`.
  std::string shape_rule;
  std::vector<std::string> dims;
  std::string dtype;  // "same:x" or a dtype name
  // How the output is compared with the oracle's (docs/schema-format.md, "Equivalence"):
  // "elementwise" (default; position by position under the tolerance), "permutation_of_ties"
  // (positions may permute where `tie_key`'s values are equal: topk/sort indices),
  // "set" (rows along dim 0 as a set: unique), "multiset" (rows as a multiset: join pairs).
  std::string equivalence = "elementwise";
  std::string tie_key;       // permutation_of_ties: output whose equal values define ties
  std::string aligned_with;  // rows follow the row matching of that (set/multiset) output
  std::string strict_when;   // bool attribute that makes the comparison elementwise (sort's stable)
  // "static" (default) or "data_dependent": one dim in `dims` is "?", its extent decided by the
  // data (a filter), at most `max_size` (Expr).
  std::string size_rule = "static";
  std::string max_size;
  // Its length is a value, decided by the data: a length unlike the oracle's is a wrong result
  // wherever values are judged, not only the contract gate's finding.
  bool data_dependent() const { return size_rule == "data_dependent"; }
};

// Tolerance for one dtype. Modes (docs/tolerances.md):
//   exact                 bitwise equal to the correctly rounded oracle (NaN-ness matched)
//   ulp                   ulp_distance(out, round(ref)) <= ulps
//   reduction             |out-ref| <= ulps*ulp_at(ref) + c*u(accumulator)*sqrt(K)*scale
//   relative-to-library   |out-ref| <= factor * |lib-ref| + ulps*ulp_at(ref)
//   module-envelope       as reduction; an infinite scale leaves the element unjudged (the module
//                         oracle's tolerance, include/gauntlet/oracle/module_oracle.h; never in a schema file)
struct Tolerance {
  std::string mode = "exact";
  double ulps = 0;
  double c = 0;
  double ceiling_c = 0;              // hard ceiling constant, bound c*u*K*scale (accumulation gate)
  std::string accumulator = "float32";
  double factor = 0;
  std::string reason;                // why this tolerance (required by lint)
};

struct ReductionInfo {
  std::string dim_attr;  // attribute naming the reduced dim, or empty
  std::string K;         // Expr: number of terms per output element
  std::string identity;  // "0", "-inf", "1", ...
};

struct ErrorInput {
  std::string description;
  // Overrides applied to a valid case: per input name, a replacement shape pattern and/or values.
  std::map<std::string, std::vector<std::string>> shape_overrides;
  std::map<std::string, ValueDomain> value_overrides;
  std::map<std::string, DType> dtype_overrides;
  AttrMap attr_overrides;                // attribute values replaced (e.g. dim out of range)
  std::vector<std::string> constraints;  // Exprs the case must satisfy for the override to be invalid
};

struct OpSchema {
  int schema_version = 1;
  std::string name;
  std::string semantics;                  // human text, e.g. "torch.softmax(x, dim)"
  std::string source_file;                // where it was loaded from
  std::map<std::string, DimDomain> dims;
  std::vector<std::string> constraints;   // Exprs that must be nonzero for a valid case
  std::vector<std::string> attr_constraints;  // double Exprs over attributes (eval_double_expr)
  int64_t max_numel = 0;                  // cases whose inputs/outputs exceed this many elements are
                                          // outside the tested domain (not errors); 0: no cap
  std::vector<InputSpec> inputs;
  std::vector<AttrSpec> attributes;
  std::vector<OutputSpec> outputs;
  std::string oracle;
  std::map<DType, Tolerance> tolerance;
  std::string nan_inf = "propagate";      // "propagate" | "ignore" | "custom" (see notes)
  std::string nan_inf_notes;
  // The special values the special-values gate places in the inputs ("nan", "+inf", "-inf"); empty
  // means all three. An op whose contract has no answer for one (a quantizer and NaN) leaves it out.
  std::vector<std::string> nan_inf_inputs;
  std::string determinism = "bitwise";    // "bitwise" | "tolerance" | "equivalence"
  std::string determinism_notes;          // required unless bitwise
  std::optional<ReductionInfo> reduction;
  std::string flops;                      // Expr
  std::string bytes;                      // Expr
  std::vector<ErrorInput> error_inputs;
  std::string error_inputs_note;          // why there are none (required when error_inputs is empty)
  std::vector<std::string> forbidden_ops; // ATen ops a kernel must not call (provenance gate)
  // Dims along which an output element depends on the other elements without any sum (a sort's
  // ranks, a filter's compaction): no slice along them is a slice of the result, so the
  // statelessness gate's batch property is not checked along them.
  std::vector<std::string> coupled_dims;

  const InputSpec* input(const std::string& n) const;
  const AttrSpec* attribute(const std::string& n) const;
  // The input whose dtype is the case's (same_dtype_as followed): the first that allows a floating
  // dtype, so an op whose keys or int8 data come first (group_by_sum, int8_matmul) is verified in
  // the dtypes of its float values or scales; the first input when none does (unique, hash_join).
  const InputSpec* case_dtype_input() const;
  // The dtypes a case is verified in, which also key the tolerance: the case dtype input's
  // floating dtypes, or all of its dtypes for an op with no floating input.
  std::vector<DType> case_dtypes() const;
  // The first attr_constraint these attribute values break, "" when they keep every one; a
  // constraint that cannot be evaluated counts as broken, its reason in *why.
  std::string broken_attr_constraint(const std::map<std::string, double>& values, std::string* why) const;
};

// A defect found by lint or load: the file and the field (JSON pointer) and what is wrong.
struct SchemaIssue {
  std::string file;
  std::string field;  // e.g. "/tolerance/float16/reason"
  std::string message;
};

// Parses one schema file. On failure returns nullopt and appends at least one issue.
std::optional<OpSchema> load_schema_file(const std::string& path, std::vector<SchemaIssue>* issues);

// Loads every *.json under `dir`, sorted by name. Issues of bad files are appended; good files load.
std::vector<OpSchema> load_schema_dir(const std::string& dir, std::vector<SchemaIssue>* issues);

// Deep checks beyond parsing: every field the SPEC requires, expressions parse and name known
// dims/attrs, tolerance reasons present, oracle id known (`known_oracles`; an empty list skips
// that one check), defaults in domain. Each issue's field is a JSON pointer into the file.
std::vector<SchemaIssue> lint_schema(const OpSchema& s, const std::vector<std::string>& known_oracles);

// load_schema_file's issues, then (when it loaded) lint_schema's: what `gauntlet schemas lint` runs.
std::vector<SchemaIssue> lint_schema_file(const std::string& path,
                                          const std::vector<std::string>& known_oracles);

// Where opschemas/ lives: $GAUNTLET_SCHEMAS, else <exe dir>/../opschemas, else the source tree's.
std::string default_schema_dir();

}  // namespace gauntlet
