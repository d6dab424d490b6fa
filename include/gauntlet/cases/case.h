// A test case: reproducible recipes for every input tensor plus attributes; the unit of replay.
#pragma once
#include <ATen/ATen.h>

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gauntlet/cases/integer_spread.h"
#include "gauntlet/schema/manifest.h"
#include "gauntlet/schema/schema.h"
#include "gauntlet/common/digest.h"  // inputs_digest: a case's inputs in replay files
#include "gauntlet/common/types.h"
#include "gauntlet/common/wire.h"

namespace gauntlet {

// Value distributions. Each element's value is a pure function of (seed, stream, index), so a
// recipe regenerates the same bytes anywhere.
enum class Distribution {
  Normal,       // N(0,1)
  Uniform,      // U(-1,1)
  Small,        // N(0,1) * 1e-3
  Large,        // N(0,1) * 1e3
  OneSigned,    // |N(0,1)|
  HeavyTailed,  // N(0,1) / max(U(0,1), 1e-3): Cauchy-like tails up to 1e3
  Outliers,     // N(0,1), 1% of elements scaled by 1e3
  Uniform01,    // U[0,1): the KernelBench-style check's inputs
  Index,        // integers in [low, high)
  // Edge-of-range values for the subnormals gate (scaled to the recipe's dtype):
  Subnormal,    // subnormals of the dtype, random sign and magnitude
  NearMax,      // magnitudes in [max_finite/4, max_finite], random sign
  NearMinNormal,  // magnitudes in [min_normal/2, 4*min_normal], random sign
  LargeLogits,  // U(-1,1) * min(1e4, max_finite/4) + shifts: overflows exp without max-subtraction
  TinySpread,   // 1 + N(0,1)*1e-3 * ulp-ish spread: tiny variance around a large mean (norms)
  // Adversarial reductions for the accumulation gate (P = the dtype's precision in bits). The first
  // three are laid out along the recipe's `axis` (each line along it is one "row"):
  Swamp,            // one large value +-2^(6..9) early in the row, the rest small values of the same
                    // sign 2^-(P+1+rung) times it (rung = row % 8): each is below half an ulp of the
                    // large one, so a dtype-precision running sum drops them all
  Cancellation,     // first half one-signed [1,2)*2^(0..3), second half the mirrored negatives plus a
                    // few ulps: the exact sum is tiny next to the partial sums
  PartialOverflow,  // Cancellation scaled so the first half sums to ~3x the dtype's max_finite: the
                    // partial sums overflow the dtype while the exact result fits
  IntegerExact,     // integers in [-7, 16]: products and sums exact in a float32 accumulator
  SmallIntegers,    // integers in [0, 3]: IntegerExact's partner in dot products (sums stay finite in
                    // float16 yet pass 2048, where float16 stops holding every integer)
  NearEqual,        // U(-1,1)/8: near-equal logits (a float16 running sum of exp stalls at 2048)
  LargeMean,        // 256 + N(0,1): rows whose sum and sum of squares overflow float16, and whose
                    // one-pass variance E[x^2] - E[x]^2 cancels 16 bits even in float32
  NearOne,          // 1 + U[0,1): the partner operand of a dot product under test
};
// True for the distributions whose values depend on the position along TensorRecipe::axis.
bool distribution_uses_axis(Distribution d);
const char* distribution_name(Distribution d);
bool distribution_from_name(const std::string& n, Distribution* d);
// The distributions the accuracy gate sweeps.
std::vector<Distribution> accuracy_distributions();

struct TensorRecipe {
  std::string name;  // the schema input it feeds
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;
  Distribution distribution = Distribution::Normal;
  int64_t low = 0, high = 0;  // Index: [low, high)
  // Index: how the integers are spread (the schema's key, integer, bool and offsets value domains;
  // integer_spread.h): keys repeat uniformly, Zipf-skewed, all equal, all distinct or in ascending
  // runs (`alpha`: the Zipf exponent), ascending when `sorted`. With `offsets`, the values are
  // monotone segment offsets from 0 to `high` (the total), their lengths spread as `spread`.
  Spread spread = Spread::Uniform;
  double alpha = 0;
  bool sorted = false;
  bool offsets = false;
  bool positive = false;      // value domain "positive"/"nonnegative": magnitude only
  // Floating values with ties (ValueDomain::ties): the spread this case drew ("uniform", "zipf"
  // with `alpha`, "all_equal", "sorted_runs", "reverse_runs"), "" for plain draws. The values
  // come from a pool of max(1, n/4) draws of `distribution` (tied_values in case.cpp).
  std::string ties;
  std::string structure;      // value domain's structure over the last two dims (schema.h), "" none
  // Value domain "quantizable": the quantizer's scale (> 0; 0 = none) and zero point; `low`/`high`
  // hold the quantized range. The distribution's values are laid on that grid (quantizer_grid_value).
  double grid_scale = 0;
  int64_t grid_zero_point = 0;
  // Memory layout of the view handed to the kernel; the logical values are the same as the
  // contiguous tensor's (except "expanded", whose values are generated with the first dim of size
  // 1 and then broadcast with stride 0): contiguous, transposed (last two dims), strided (every
  // other element of a twice-as-wide storage), offset (storage offset, NaN-filled prefix),
  // expanded, channels_last (4-D).
  std::string layout = "contiguous";
  // Special values placed after generation: (flat logical index, value), e.g. NaN or -inf.
  std::vector<std::pair<int64_t, double>> specials;
  // The dim the row-structured distributions (distribution_uses_axis) lie along; negative counts
  // from the end. Replay files carry it only for those distributions (absent: -1).
  int64_t axis = -1;
  uint64_t seed = 0;
  uint64_t stream = 0;
};

struct Case {
  uint64_t index = 0;               // case index within its gate
  std::string label;                // human summary, e.g. "float16 normal x=[7,1000] dim=-1"
  std::map<std::string, int64_t> dims;
  std::vector<TensorRecipe> tensors;  // in the schema's input order
  AttrMap attrs;
  // Non-empty: the case lies outside the kernel's contract (an error input, or a shape past the
  // manifest's limits) and the kernel must reject it; the text says why. Replay needs it to know
  // which outcome is right.
  std::string outside_contract;
};

// Element i of a "quantizable" recipe: the distribution's value `v` laid on the quantizer's grid.
// Half the elements are v times a quarter of the quantized range, in units of the scale; the rest
// are the hazards of a quantizer: values at an exact rounding boundary (k + 0.5) * scale rounded to
// the dtype, one ulp above and below such a boundary, values past either saturation limit, and
// huge finite values (whose product with 1/scale may overflow). The KernelBench-style check's
// U[0,1) (Distribution::Uniform01) is only scaled: plain random data, as a problem's get_inputs().
double quantizer_grid_value(const TensorRecipe& r, uint64_t i, double v);

// Builds the tensor a recipe describes (on the CPU, of the recipe's dtype, in its layout). Every
// value is first rounded to the dtype exactly (numerics::round_to), so conversion is exact.
at::Tensor materialize(const TensorRecipe& r);
std::vector<at::Tensor> materialize_all(const Case& c);
// The logical value at flat index `flat` of a floating recipe, as materialize gives it (specials
// included, structure and layout aside), without drawing the other elements where it can: what an
// attribute drawn from an input's values (AttrSpec::drawn_from) takes.
double recipe_value(const TensorRecipe& r, int64_t flat);
// The values projected onto a structure over the last two dims (TensorRecipe::structure): entries
// are kept or zeroed, a symmetric matrix mirrors its lower triangle. Rank < 2, and "symmetric" on
// non-square matrices, are returned as they are.
at::Tensor with_structure(const at::Tensor& t, const std::string& structure);
// Whether the projection keeps the element at flat index `flat` of a recipe's logical tensor as
// drawn (false: a structural zero, or a symmetric matrix's upper entry, which mirrors the lower).
bool structure_keeps(const TensorRecipe& r, int64_t flat);
// A position the structure keeps, near `flat`: itself when kept, else its mirror across the
// diagonal (a triangle's other half), or the diagonal element of its row or column.
int64_t structure_position(const TensorRecipe& r, int64_t flat);
// The same logical values in another memory layout (see TensorRecipe::layout).
at::Tensor apply_layout(const at::Tensor& logical, const std::string& layout);

// The kernel call for a case: tensors then attributes in the schema's order.
std::vector<wire::Arg> make_args(const OpSchema& schema, const std::vector<at::Tensor>& tensors,
                                 const AttrMap& attrs);

// The dtype a case is verified in, which keys the schema's tolerance: its recipe of the schema's
// case dtype input (OpSchema::case_dtype_input: the first input allowing a floating dtype, so
// group_by_sum's values, not its int64 keys), else its first tensor's. case_recipe is that
// tensor's recipe: its distribution and seed are the case's when a gate rebuilds it at other dims
// (a case without tensors has none: case_dtype is then float32).
const TensorRecipe& case_recipe(const OpSchema& schema, const Case& c);
DType case_dtype(const OpSchema& schema, const Case& c);


nlohmann::json case_to_json(const Case& c);
bool case_from_json(const nlohmann::json& j, Case* c, std::string* error);

// Chooses concrete cases from the schema's domain narrowed by the manifest.
class CaseSpace {
 public:
  CaseSpace(const OpSchema& schema, const KernelManifest& manifest);
  // dtypes the kernel is verified in (manifest's, else the schema's), in schema order.
  const std::vector<DType>& dtypes() const { return dtypes_; }
  // A valid typical case: `variant` rotates through shape alternatives, typical sizes and
  // attribute choices. false when no valid combination exists (error says why).
  bool typical_case(uint64_t variant, DType dtype, Distribution dist, uint64_t seed, Case* out,
                    std::string* error) const;
  // The first typical shape with default attributes (the KernelBench-style check's shape).
  bool fixed_case(DType dtype, Distribution dist, uint64_t seed, Case* out, std::string* error) const;
  // A case with these dims (every schema dim named), shape alternative and attributes, inside the
  // manifest's contract: dims it declares equal take the smallest of their sizes, and a shape
  // alternative of a rank it excludes is passed over.
  bool build(const std::map<std::string, int64_t>& dims, size_t alt, const AttrMap& attrs, DType dtype,
             Distribution dist, uint64_t seed, Case* out, std::string* error) const;
  // The same case with the contract's ranks and equal dims not held (the shapes gate's probes of
  // what lies outside it; the schema's own constraints still hold).
  bool build_beyond_contract(const std::map<std::string, int64_t>& dims, size_t alt, const AttrMap& attrs,
                             DType dtype, Distribution dist, uint64_t seed, Case* out, std::string* error) const;
  // Typical sizes of a dim inside the contract (schema domain narrowed by the manifest).
  std::vector<int64_t> sizes_for(const std::string& dim) const;
  // The contract's [min, max] for a dim: the schema's domain narrowed by the manifest.
  std::pair<int64_t, int64_t> limits_for(const std::string& dim) const;
  const OpSchema& schema() const { return schema_; }
  const KernelManifest& manifest() const { return manifest_; }

 private:
  bool build_case(const std::map<std::string, int64_t>& dims, size_t alt, const AttrMap& attrs, DType dtype,
                  Distribution dist, uint64_t seed, bool hold_contract, Case* out, std::string* error) const;
  // build_case once the size_of attributes hold their dims' sizes.
  bool build_tied(const std::map<std::string, int64_t>& dims, size_t alt, const AttrMap& attrs, DType dtype,
                  Distribution dist, uint64_t seed, bool hold_contract, Case* out, std::string* error) const;
  // Whether the manifest's ranks admit this rank for the input.
  bool admits_rank(const std::string& input, int64_t rank) const;
  // Whether an input of this rank has every dim the manifest fixes for it (dim attributes).
  bool admits_fixed_dims(const std::string& input, int64_t rank) const;

  const OpSchema& schema_;
  const KernelManifest& manifest_;
  std::vector<DType> dtypes_;
};

}  // namespace gauntlet
