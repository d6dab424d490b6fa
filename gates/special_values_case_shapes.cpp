// Case shapes drawn inside a RapidCheck property: dims from each dim's candidates, attributes, cut down to stay small.
#include "special_values_case_shapes.h"

#include <rapidcheck.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "gauntlet/cases/gate.h"
#include "gauntlet/cases/property.h"

namespace gauntlet {

// --- Case shapes drawn inside a RapidCheck property; gates/subnormals.cpp uses them as well. ---
namespace gate_cases {

namespace {

// Above this many FLOPs (the schema's cost model) or this many input elements (each drawn by the
// counter-based generator), a case is cut down: the fp64 oracle, the generator and the kernel must
// stay in the millisecond range so that a gate takes well under half a second per kernel at
// budget 1.
constexpr int64_t kMaxWork = int64_t(1) << 21;
constexpr int64_t kMaxElements = int64_t(1) << 16;

int64_t numel_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

// FLOPs of the case from the schema's cost model; without one, the product of the case's dims.
int64_t work_of(const OpSchema& schema, const Case& c) {
  if (!schema.flops.empty())
    if (auto f = eval_case_expr(schema.flops, c)) return *f;
  int64_t w = 1;
  for (const auto& [name, size] : c.dims) w = std::min<int64_t>(w * std::max<int64_t>(1, size), int64_t(1) << 40);
  return w;
}

}  // namespace

std::vector<int64_t> dim_candidates(const CaseSpace& space, const std::string& dim, bool tiny) {
  auto [lo, hi] = space.limits_for(dim);
  lo = std::max<int64_t>(lo, 1);  // zero-size dims belong to the shapes gate
  // The smallest size first (what shrinking lands on), optionally the next two, then the typical
  // sizes (the large ones, 768, 1000, 4097, hold the tile edges at 8..128). Tile-boundary and odd
  // sizes are the shapes gate's business: a kernel that fails only there is reported by it.
  std::vector<int64_t> out = {lo};
  if (tiny) out.insert(out.end(), {lo + 1, lo + 2});
  for (int64_t s : space.sizes_for(dim)) out.push_back(s);
  out.erase(std::remove_if(out.begin(), out.end(), [&](int64_t s) { return s < lo || s > hi; }), out.end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

int64_t pick_uniform(int64_t n) {
  // pick_index's range grows with RapidCheck's size (small first), right for sizes but it would
  // make the last dtypes and choices rare; a fixed size keeps categorical choices uniform while
  // they still shrink toward the first.
  return n <= 1 ? 0 : *rc::gen::resize(100, rc::gen::inRange<int64_t>(0, n));
}

// Builds the case; when the schema's constraints reject the drawn dims (conv2d's kernel larger than
// its input), dims are set to their smallest candidate one at a time, in name order, until they fit.
static bool build_fitting(const CaseSpace& space, std::map<std::string, int64_t> dims, size_t alt,
                          const AttrMap& attrs, DType dtype, Distribution dist, uint64_t seed, Case* out) {
  std::string error;
  if (space.build(dims, alt, attrs, dtype, dist, seed, out, &error)) return true;
  for (auto& [name, size] : dims) {
    const auto cands = dim_candidates(space, name, false);
    if (!cands.empty()) size = cands.front();
    if (space.build(dims, alt, attrs, dtype, dist, seed, out, &error)) return true;
  }
  return false;
}

Case draw_shaped_case(const CaseSpace& space, DType dtype, Distribution dist, uint64_t seed, bool tiny,
                      bool uniform_dims) {
  const OpSchema& schema = space.schema();
  const size_t nalt = schema.inputs.empty() ? 1 : std::max<size_t>(1, schema.inputs[0].shapes.size());
  const size_t alt = size_t(pick_uniform(int64_t(nalt)));
  std::map<std::string, int64_t> dims;
  if (uniform_dims) {
    // Every candidate equally likely from the first case on (still shrinking toward the smallest).
    for (const auto& [name, domain] : schema.dims) {
      const std::vector<int64_t> cands = dim_candidates(space, name, tiny);
      dims[name] = cands.empty() ? space.limits_for(name).first : cands[size_t(pick_uniform(int64_t(cands.size())))];
    }
  } else {
    dims = pick_dims(space, [&](const std::string& d) { return dim_candidates(space, d, tiny); });
  }
  // Attributes as CaseSpace chooses them: the manifest's fixed values, else one of the schema's
  // listed values, else the default; dim attributes are drawn below once the rank is known.
  AttrMap attrs;
  for (const AttrSpec& a : schema.attributes) {
    auto fixed = space.manifest().attrs.find(a.name);
    if (fixed != space.manifest().attrs.end()) attrs[a.name] = fixed->second;
    else if (!a.values.empty()) attrs[a.name] = a.values[size_t(pick_uniform(int64_t(a.values.size())))];
    else attrs[a.name] = a.default_value;
  }
  // Cut oversized cases down, largest dim first, to its next smaller candidate.
  Case c;
  for (int guard = 0;; ++guard) {
    if (!build_fitting(space, dims, alt, attrs, dtype, dist, seed, &c)) {
      // No drawn combination fits: fall back to the schema's first typical case (still valid).
      std::string error;
      if (!space.typical_case(0, dtype, dist, seed, &c, &error)) RC_DISCARD("no valid case: " + error);
      return c;
    }
    dims = c.dims;
    int64_t elements = 0;
    for (const TensorRecipe& r : c.tensors) elements += numel_of(r.shape);
    if (guard >= 256 || (work_of(schema, c) <= kMaxWork && elements <= kMaxElements)) break;
    std::string biggest;
    int64_t next = 0;
    for (const auto& [d, size] : dims) {
      int64_t smaller = 0;
      for (int64_t s : dim_candidates(space, d, tiny))
        if (s < size) smaller = s;
      if (smaller > 0 && (biggest.empty() || size > dims[biggest])) biggest = d, next = smaller;
    }
    if (biggest.empty()) break;
    dims[biggest] = next;
  }
  bool has_dim_attr = false;
  for (const AttrSpec& a : schema.attributes) {
    if (a.dim_of.empty() || space.manifest().attrs.count(a.name)) continue;
    for (const TensorRecipe& r : c.tensors)
      if (r.name == a.dim_of && !r.shape.empty()) {
        const int64_t rank = int64_t(r.shape.size());
        const int64_t k = pick_uniform(rank + 1);  // -1 first (the usual last dim), then 0..rank-1
        attrs[a.name] = k == 0 ? int64_t(-1) : k - 1;
        has_dim_attr = true;
      }
  }
  if (has_dim_attr) build_fitting(space, c.dims, alt, attrs, dtype, dist, seed, &c);  // relabels
  return c;
}

int64_t reduced_axis(const OpSchema& schema, const Case& c, const TensorRecipe& input) {
  if (!schema.reduction || schema.reduction->dim_attr.empty()) return -1;
  const AttrSpec* a = schema.attribute(schema.reduction->dim_attr);
  if (!a || a->dim_of != input.name) return -1;
  auto it = c.attrs.find(a->name);
  if (it == c.attrs.end() || !std::holds_alternative<int64_t>(it->second)) return -1;
  const int64_t rank = int64_t(input.shape.size()), d = std::get<int64_t>(it->second);
  if (rank == 0 || d < -rank || d >= rank) return -1;
  return d < 0 ? d + rank : d;
}

}  // namespace gate_cases

}  // namespace gauntlet
