// Op schemas (opschemas/*.json): the contract of an op, modeled on PyTorch's OpInfo. See docs/schema-format.md.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gauntlet/types.h"

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
std::optional<std::vector<std::string>> expr_names(const std::string& e, std::string* error);

struct DimDomain {
  int64_t min = 1;
  int64_t max = 1;
  std::vector<int64_t> typical;  // sizes the accuracy gate uses
  std::vector<int64_t> hazards;  // tile-hazard sizes the shapes gate adds (e.g. 127, 129)
  bool zero_allowed = false;     // size 0 is inside the domain
};

// Value domain of an input tensor.
struct ValueDomain {
  std::string kind = "real";  // "real" | "positive" | "nonnegative" | "index" | "bool"
  std::string below;          // kind == "index": values in [low, below), an Expr
  std::string low = "0";      // kind == "index": lower bound Expr
};

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
};

struct AttrSpec {
  std::string name;
  std::string type;             // "int64" | "double" | "bool"
  AttrValue default_value;
  std::vector<AttrValue> values;  // explicit choices (may be empty)
  std::optional<double> min, max;  // numeric range (inclusive)
  std::string dim_of;             // int64 dim attribute: valid dims of this input (-rank..rank-1)
};

struct OutputSpec {
  std::string name;
  // Shape rule: "same:x", "reduce:x:dim" (x with dim attr removed), "scalar", "broadcast:a,b",
  // or explicit dims (list of Exprs) in `dims`.
  std::string shape_rule;
  std::vector<std::string> dims;
  std::string dtype;  // "same:x" or a dtype name
};

// Tolerance for one dtype. Modes (docs/tolerances.md):
//   exact                 bitwise equal to the correctly rounded oracle (NaN-ness matched)
//   ulp                   ulp_distance(out, round(ref)) <= ulps
//   reduction             |out-ref| <= ulps*ulp_at(ref) + c*u(accumulator)*sqrt(K)*scale
//   relative-to-library   |out-ref| <= factor * |lib-ref| + ulps*ulp_at(ref)
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
};

struct OpSchema {
  std::string name;
  std::string semantics;                  // human text, e.g. "torch.softmax(x, dim)"
  std::string source_file;                // where it was loaded from
  std::map<std::string, DimDomain> dims;
  std::vector<std::string> constraints;   // Exprs that must be nonzero for a valid case
  std::vector<InputSpec> inputs;
  std::vector<AttrSpec> attributes;
  std::vector<OutputSpec> outputs;
  std::string oracle;
  std::map<DType, Tolerance> tolerance;
  std::string nan_inf = "propagate";      // "propagate" | "ignore" | "custom" (see notes)
  std::string nan_inf_notes;
  std::string determinism = "bitwise";    // "bitwise" | "tolerance"
  std::optional<ReductionInfo> reduction;
  std::string flops;                      // Expr
  std::string bytes;                      // Expr
  std::vector<ErrorInput> error_inputs;
  std::vector<std::string> forbidden_ops; // ATen ops a kernel must not call (provenance gate)

  const InputSpec* input(const std::string& n) const;
  const AttrSpec* attribute(const std::string& n) const;
  std::vector<DType> float_dtypes() const;  // dtypes of the first input
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
// dims/attrs, tolerance reasons present, oracle id known (`known_oracles`), defaults in domain.
std::vector<SchemaIssue> lint_schema(const OpSchema& s, const std::vector<std::string>& known_oracles);

// Where opschemas/ lives: $GAUNTLET_SCHEMAS, else <exe dir>/../opschemas, else the source tree's.
std::string default_schema_dir();

}  // namespace gauntlet
