// Choosing concrete cases (dims, shapes, attributes, dtypes) from a schema narrowed by a kernel manifest.
#include <algorithm>
#include <cstdint>
#include <optional>

#include "gauntlet/cases/case.h"
#include "gauntlet/common/rng.h"
#include "gauntlet/common/wire.h"

namespace gauntlet {
namespace {

// Streams of the case-level draws (apart from every input's own stream, its index).
constexpr uint64_t kTieStream = 0x7200, kDrawnAttrStream = 0x7300;

uint64_t name_hash(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

int64_t attr_as_int(const AttrValue& v) {
  if (std::holds_alternative<int64_t>(v)) return std::get<int64_t>(v);
  if (std::holds_alternative<bool>(v)) return std::get<bool>(v) ? 1 : 0;
  // A double attribute (a quantizer's scale of 2^100) may lie past int64: clamped, never UB.
  const double d = std::get<double>(v);
  return !(d == d) ? 0 : d >= 9.2e18 ? INT64_MAX : d <= -9.2e18 ? INT64_MIN : int64_t(d);
}

// True when `b` broadcasts to `a` (numpy rules, b no larger in rank).
bool broadcastable(const std::vector<int64_t>& b, const std::vector<int64_t>& a) {
  if (b.size() > a.size()) return false;
  for (size_t i = 0; i < b.size(); ++i) {
    int64_t bs = b[b.size() - 1 - i], as = a[a.size() - 1 - i];
    if (bs != as && bs != 1) return false;
  }
  return true;
}

// A double attribute drawn from an input's values (AttrSpec::drawn_from): one of them, at a
// position the seed picks, unless the manifest fixes it or the input is empty.
void draw_attributes(const OpSchema& schema, const KernelManifest& manifest, uint64_t seed, Case* c) {
  for (size_t k = 0; k < schema.attributes.size(); ++k) {
    const AttrSpec& a = schema.attributes[k];
    if (a.drawn_from.empty() || manifest.attrs.count(a.name)) continue;
    for (const TensorRecipe& r : c->tensors) {
      if (r.name != a.drawn_from || !dtype_is_floating(r.dtype) || r.distribution == Distribution::Index) continue;
      int64_t n = 1;
      for (int64_t e : r.shape) n *= e;
      if (n > 0) c->attrs[a.name] = recipe_value(r, int64_t(rng::below(seed, kDrawnAttrStream + k, 0, uint64_t(n))));
    }
  }
}

// The distribution of a key or offsets input in a case: the domain's own, or with "also" one of
// [distribution, also...] picked by the case's seed and the input's position (recorded in the
// recipe, so a replay draws the same keys).
std::string spread_for(const ValueDomain& v, uint64_t seed, size_t input) {
  if (v.also.empty()) return v.distribution;
  const uint64_t pick = (seed ^ (uint64_t(input) * 0x9E3779B97F4A7C15ull)) * 0xBF58476D1CE4E5B9ull;
  const size_t k = size_t((pick >> 32) % (v.also.size() + 1));
  return k == 0 ? v.distribution : v.also[k - 1];
}

}  // namespace

CaseSpace::CaseSpace(const OpSchema& schema, const KernelManifest& manifest)
    : schema_(schema), manifest_(manifest) {
  std::vector<DType> all = schema.case_dtypes();
  if (manifest.dtypes.empty()) dtypes_ = all;
  else
    for (DType d : all)
      if (std::find(manifest.dtypes.begin(), manifest.dtypes.end(), d) != manifest.dtypes.end()) dtypes_.push_back(d);
  // A dtype this LibTorch cannot make tensors of (float8_e4m3fn before 2.1) is not drawn; when it
  // was the only one, the kernel is not run at all (why_not_runnable_here).
  dtypes_.erase(std::remove_if(dtypes_.begin(), dtypes_.end(), [](DType d) { return !wire::dtype_unavailable(d).empty(); }),
                dtypes_.end());
}

std::pair<int64_t, int64_t> CaseSpace::limits_for(const std::string& dim) const {
  auto it = schema_.dims.find(dim);
  if (it == schema_.dims.end()) return {1, 1};
  int64_t lo = it->second.zero_allowed ? 0 : std::max<int64_t>(it->second.min, 1), hi = it->second.max;
  // A dim the contract ties to others takes only the sizes all of them allow.
  std::vector<std::string> tied{dim};
  for (const auto& group : manifest_.equal_dims)
    if (std::find(group.begin(), group.end(), dim) != group.end()) tied.insert(tied.end(), group.begin(), group.end());
  for (const std::string& d : tied) {
    auto other = schema_.dims.find(d);
    if (other != schema_.dims.end() && d != dim) {
      lo = std::max(lo, other->second.zero_allowed ? 0 : std::max<int64_t>(other->second.min, 1));
      hi = std::min(hi, other->second.max);
    }
    auto lim = manifest_.shapes.find(d);
    if (lim != manifest_.shapes.end()) {
      // An exact size is a problem's own (problem_contract.h), which may lie past the schema's
      // domain: it wins. check_contract keeps a manifest's declared limits inside the domain.
      if (lim->second.min && lim->second.max && *lim->second.min == *lim->second.max)
        return {*lim->second.min, *lim->second.max};
      if (lim->second.min) lo = std::max(lo, *lim->second.min);
      if (lim->second.max) hi = std::min(hi, *lim->second.max);
    }
  }
  return {lo, hi};
}

std::vector<int64_t> CaseSpace::sizes_for(const std::string& dim) const {
  auto it = schema_.dims.find(dim);
  if (it == schema_.dims.end()) return {1};
  int64_t lo = std::max<int64_t>(it->second.min, 1), hi = it->second.max;
  auto lim = manifest_.shapes.find(dim);
  if (lim != manifest_.shapes.end()) {
    if (lim->second.min && lim->second.max && *lim->second.min == *lim->second.max) return {*lim->second.min};
    if (lim->second.min) lo = std::max(lo, *lim->second.min);
    if (lim->second.max) hi = std::min(hi, *lim->second.max);
  }
  std::vector<int64_t> out;
  for (int64_t s : it->second.typical)
    if (s >= lo && s <= hi) out.push_back(s);
  if (out.empty() && lo <= hi) {
    // The kernel's contract excludes every typical size: use the nearest sizes it allows.
    for (int64_t s : it->second.typical) out.push_back(std::clamp(s, lo, hi));
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
  }
  return out;
}

bool CaseSpace::typical_case(uint64_t variant, DType dtype, Distribution dist, uint64_t seed, Case* out,
                             std::string* error) const {
  std::string last_error = "no combination of typical sizes satisfies the schema's constraints";
  for (uint64_t attempt = 0; attempt < 64; ++attempt) {
    const uint64_t v = variant + attempt * 7919;
    std::map<std::string, int64_t> dims;
    bool ok = true;
    for (const auto& [name, dom] : schema_.dims) {
      std::vector<int64_t> sizes = sizes_for(name);
      if (sizes.empty()) {
        ok = false;
        last_error = "the manifest's limits leave no size for dim " + name;
        break;
      }
      dims[name] = sizes[(v + name_hash(name)) % sizes.size()];
    }
    if (!ok) continue;
    AttrMap attrs;
    for (const AttrSpec& a : schema_.attributes) {
      auto fixed = manifest_.attrs.find(a.name);
      if (fixed != manifest_.attrs.end()) attrs[a.name] = fixed->second;
      else if (!a.values.empty()) attrs[a.name] = a.values[(v / 3 + name_hash(a.name)) % a.values.size()];
      else attrs[a.name] = a.default_value;
    }
    const size_t nalt = schema_.inputs.empty() ? 1 : schema_.inputs[0].shapes.size();
    if (build(dims, size_t(v % std::max<size_t>(1, nalt)), attrs, dtype, dist, seed, out, &last_error)) {
      // Dim attributes rotate through the valid dims of their input, unless the manifest fixes them.
      for (const AttrSpec& a : schema_.attributes) {
        if (a.dim_of.empty() || manifest_.attrs.count(a.name)) continue;
        for (const TensorRecipe& r : out->tensors)
          if (r.name == a.dim_of) {
            const int64_t rank = int64_t(r.shape.size());
            if (rank == 0) continue;
            const int64_t pick = int64_t((v / 2) % uint64_t(rank + 1));  // -1 first, then 0..rank-1
            out->attrs[a.name] = pick == 0 ? int64_t(-1) : pick - 1;
          }
      }
      out->index = variant;
      return true;
    }
  }
  *error = last_error;
  return false;
}

bool CaseSpace::fixed_case(DType dtype, Distribution dist, uint64_t seed, Case* out, std::string* error) const {
  std::map<std::string, int64_t> dims;
  for (const auto& [name, dom] : schema_.dims) {
    std::vector<int64_t> sizes = sizes_for(name);
    if (sizes.empty()) return (*error = "no size for dim " + name, false);
    dims[name] = sizes[sizes.size() / 2];
  }
  AttrMap attrs;
  for (const AttrSpec& a : schema_.attributes) {
    auto fixed = manifest_.attrs.find(a.name);
    attrs[a.name] = fixed != manifest_.attrs.end() ? fixed->second : a.default_value;
  }
  return build(dims, 0, attrs, dtype, dist, seed, out, error);
}

bool CaseSpace::admits_rank(const std::string& input, int64_t rank) const {
  auto it = manifest_.ranks.find(input);
  return it == manifest_.ranks.end() || std::find(it->second.begin(), it->second.end(), rank) != it->second.end();
}

bool CaseSpace::admits_fixed_dims(const std::string& input, int64_t rank) const {
  for (const AttrSpec& a : schema_.attributes) {
    if (a.dim_of != input) continue;
    auto fixed = manifest_.attrs.find(a.name);
    if (fixed == manifest_.attrs.end() || !std::holds_alternative<int64_t>(fixed->second)) continue;
    const int64_t d = std::get<int64_t>(fixed->second);
    if (d < -rank || d >= rank) return false;
  }
  return true;
}

bool CaseSpace::build(const std::map<std::string, int64_t>& dims, size_t alt, const AttrMap& attrs, DType dtype,
                      Distribution dist, uint64_t seed, Case* out, std::string* error) const {
  // Dims the contract declares equal take the smallest size asked of any of them: the case stays
  // inside the contract and costs no more than the caller chose.
  std::map<std::string, int64_t> held = dims;
  for (const auto& group : manifest_.equal_dims) {
    std::optional<int64_t> smallest;
    for (const std::string& d : group)
      if (auto it = held.find(d); it != held.end()) smallest = smallest ? std::min(*smallest, it->second) : it->second;
    if (smallest)
      for (const std::string& d : group)
        if (held.count(d)) held[d] = *smallest;
  }
  return build_case(held, alt, attrs, dtype, dist, seed, true, out, error);
}

bool CaseSpace::build_beyond_contract(const std::map<std::string, int64_t>& dims, size_t alt, const AttrMap& attrs,
                                      DType dtype, Distribution dist, uint64_t seed, Case* out, std::string* error) const {
  return build_case(dims, alt, attrs, dtype, dist, seed, false, out, error);
}

// A "quantizable" input's grid: the scale and zero point the case's attributes give the quantizer,
// and the quantized range [low, below).
static bool set_quantizer_grid(const ValueDomain& v, const AttrMap& attrs, const std::map<std::string, int64_t>& vars,
                        TensorRecipe* r, std::string* error) {
  auto scale = attrs.find(v.scale);
  if (scale == attrs.end()) return (*error = "quantizable input " + r->name + ": no attribute " + v.scale, false);
  r->grid_scale = attr_as_double(scale->second);
  auto zp = v.zero_point.empty() ? attrs.end() : attrs.find(v.zero_point);
  r->grid_zero_point = zp == attrs.end() ? 0 : attr_as_int(zp->second);
  std::string why;
  auto lo = eval_expr(v.low.empty() ? "0" : v.low, vars, &why);
  auto hi = eval_expr(v.below, vars, &why);
  if (!lo || !hi) return (*error = "quantized range of " + r->name + ": " + why, false);
  r->low = *lo;
  r->high = *hi;
  if (!(r->grid_scale > 0) || !std::isfinite(r->grid_scale))
    return (*error = "quantizable input " + r->name + ": the scale must be finite and positive", false);
  return true;
}

bool CaseSpace::build_case(const std::map<std::string, int64_t>& dims, size_t alt, const AttrMap& attrs, DType dtype,
                           Distribution dist, uint64_t seed, bool hold_contract, Case* out, std::string* error) const {
  // An attribute that is a dim's size (AttrSpec::size_of) follows the dim, whatever the caller chose.
  AttrMap tied = attrs;
  for (const AttrSpec& a : schema_.attributes)
    if (!a.size_of.empty())
      if (auto d = dims.find(a.size_of); d != dims.end()) tied[a.name] = AttrValue(d->second);
  return build_tied(dims, alt, tied, dtype, dist, seed, hold_contract, out, error);
}

bool CaseSpace::build_tied(const std::map<std::string, int64_t>& dims, size_t alt, const AttrMap& attrs, DType dtype,
                           Distribution dist, uint64_t seed, bool hold_contract, Case* out, std::string* error) const {
  std::map<std::string, int64_t> vars = dims;
  for (const auto& [k, v] : attrs) vars[k] = attr_as_int(v);
  vars["elem_size"] = dtype_size(dtype);
  for (const std::string& c : schema_.constraints) {
    std::string why;
    auto r = eval_expr(c, vars, &why);
    if (!r) return (*error = "constraint '" + c + "': " + why, false);
    if (*r == 0) return (*error = "constraint '" + c + "' fails", false);
  }
  if (!schema_.attr_constraints.empty()) {
    std::map<std::string, double> values;
    for (const auto& [k, v] : attrs) values[k] = attr_as_double(v);
    std::string why;
    const std::string broken = schema_.broken_attr_constraint(values, &why);
    if (!broken.empty())
      return (*error = "attribute constraint '" + broken + (why.empty() ? "' fails" : "': " + why), false);
  }
  Case c;
  c.dims = dims;
  c.attrs = attrs;
  std::map<std::string, std::vector<int64_t>> shapes;
  std::map<std::string, DType> dtypes;
  for (size_t i = 0; i < schema_.inputs.size(); ++i) {
    const InputSpec& in = schema_.inputs[i];
    if (in.shapes.empty()) return (*error = "input " + in.name + " has no shape", false);
    // The first input takes the chosen alternative; the others take the first that fits.
    std::vector<int64_t> shape;
    bool found = false;
    for (size_t k = 0; k < in.shapes.size() && !found; ++k) {
      const auto& pattern = in.shapes[(alt + k) % in.shapes.size()];
      // A dim attribute the manifest fixes is a dim of only some alternatives' ranks: the others
      // are outside the kernel's contract (and the first input moves on to the next alternative).
      if (!admits_fixed_dims(in.name, int64_t(pattern.size()))) continue;
      if (hold_contract && !admits_rank(in.name, int64_t(pattern.size()))) continue;
      shape.clear();
      bool ok = true;
      for (const std::string& e : pattern) {
        std::string why;
        auto v = eval_expr(e, vars, &why);
        if (!v || *v < 0) {
          ok = false;
          break;
        }
        shape.push_back(*v);
      }
      if (ok && !in.broadcast_to.empty()) ok = shapes.count(in.broadcast_to) && broadcastable(shape, shapes[in.broadcast_to]);
      found = ok;
      if (i == 0) break;
    }
    if (!found) return (*error = "no shape alternative of input " + in.name + " fits", false);
    shapes[in.name] = shape;
    TensorRecipe r;
    r.name = in.name;
    r.shape = shape;
    if (!in.same_dtype_as.empty() && dtypes.count(in.same_dtype_as)) r.dtype = dtypes[in.same_dtype_as];
    else if (std::find(in.dtypes.begin(), in.dtypes.end(), dtype) != in.dtypes.end()) r.dtype = dtype;
    else if (!in.dtypes.empty()) r.dtype = in.dtypes[0];
    else r.dtype = dtype;
    dtypes[in.name] = r.dtype;
    r.seed = seed;
    r.stream = i;
    const std::string& kind = in.values.kind;
    if (kind == "index" || kind == "integer" || kind == "key" || kind == "bool") {
      std::string why;
      auto lo = eval_expr(kind == "bool" || in.values.low.empty() ? "0" : in.values.low, vars, &why);
      auto hi = eval_expr(kind == "bool" ? "2" : in.values.below, vars, &why);
      if (!lo || !hi) return (*error = kind + " bounds of " + in.name + ": " + why, false);
      r.distribution = Distribution::Index;
      r.low = *lo;
      r.high = *hi;
      r.sorted = in.values.sorted;
      if (kind == "key") {
        r.spread = spread_from_name(spread_for(in.values, seed, i)).value_or(Spread::Uniform);
        r.alpha = in.values.alpha.value_or(0.0);
      }
    } else if (kind == "offsets") {
      std::string why;
      auto total = eval_expr(in.values.total, vars, &why);
      if (!total) return (*error = "offsets total of " + in.name + ": " + why, false);
      r.distribution = Distribution::Index;
      r.offsets = true;
      r.low = 0;
      r.high = *total;
      r.spread = spread_from_name(spread_for(in.values, seed, i)).value_or(Spread::Uniform);
      r.alpha = in.values.alpha.value_or(0.0);
    } else {
      r.distribution = dist;
      r.positive = in.values.kind == "positive" || in.values.kind == "nonnegative";
      if (kind == "quantizable" && !set_quantizer_grid(in.values, attrs, vars, &r, error)) return false;
      auto declared = manifest_.structures.find(in.name);
      r.structure = declared != manifest_.structures.end() ? declared->second : in.values.structure;
      // Tied values: each case one of the domain's spreads, by its seed (so a gate's cases meet
      // them all: all equal, ascending and descending runs, skewed and uniform repeats). The
      // KernelBench-style check's U[0,1) draws stay plain: torch.rand has no ties, and the check
      // is meant to show what such a harness sees.
      if (!in.values.ties.empty() && dtype_is_floating(r.dtype) && dist != Distribution::Uniform01) {
        r.ties = in.values.ties[rng::below(seed, i + kTieStream, 0, in.values.ties.size())];
        if (r.ties == "zipf") r.alpha = in.values.alpha.value_or(1.0);
      }
    }
    c.tensors.push_back(r);
  }
  draw_attributes(schema_, manifest_, seed, &c);
  c.label = std::string(dtype_name(dtype)) + " " + distribution_name(dist);
  for (const TensorRecipe& r : c.tensors) {
    c.label += " " + r.name + "=[";
    for (size_t k = 0; k < r.shape.size(); ++k) c.label += (k ? "," : "") + std::to_string(r.shape[k]);
    c.label += "]";
  }
  for (const auto& [k, v] : c.attrs) c.label += " " + k + "=" + attr_to_string(v);
  *out = c;
  return true;
}

}  // namespace gauntlet
