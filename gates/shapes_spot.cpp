// A point of the shapes gate's case space and how it becomes a valid case within the budget.
#include "shapes_spot.h"

#include <algorithm>

namespace gauntlet::shapes_gate {

std::string label_of(const Case& c) {
  std::string label = std::string(dtype_name(c.tensors.at(0).dtype)) + " " + distribution_name(c.tensors.at(0).distribution);
  for (const TensorRecipe& r : c.tensors) {
    label += " " + r.name + "=[";
    for (size_t k = 0; k < r.shape.size(); ++k) label += (k ? "," : "") + std::to_string(r.shape[k]);
    label += "]";
    if (r.distribution == Distribution::Index) label += "{" + std::to_string(r.low) + ".." + std::to_string(r.high - 1) + "}";
  }
  for (const auto& [k, v] : c.attrs) label += " " + k + "=" + attr_to_string(v);
  return label;
}

std::vector<AttrValue> attr_choices(const AttrSpec& a, const KernelManifest& m, int64_t rank) {
  auto fixed = m.attrs.find(a.name);
  if (fixed != m.attrs.end()) return {fixed->second};
  if (!a.dim_of.empty()) {
    std::vector<AttrValue> v{int64_t(-1)};
    for (int64_t d = 0; d < rank; ++d) v.push_back(d);
    return v;
  }
  std::vector<AttrValue> v{a.default_value};
  for (const AttrValue& x : a.values)
    if (!(x == a.default_value)) v.push_back(x);
  // Small integer ranges (conv2d's stride and padding) change output extents: try all of them.
  if (a.values.empty() && a.type == "int64" && a.min && a.max && *a.max - *a.min <= 8)
    for (int64_t x = int64_t(*a.min); x <= int64_t(*a.max); ++x)
      if (!(AttrValue(x) == a.default_value)) v.push_back(x);
  return v;
}

int64_t rank_of(const OpSchema& s, const std::string& name, size_t alt) {
  for (size_t i = 0; i < s.inputs.size(); ++i)
    if (s.inputs[i].name == name && !s.inputs[i].shapes.empty())
      return int64_t(s.inputs[i].shapes[i == 0 ? alt % s.inputs[i].shapes.size() : 0].size());
  return 1;
}

void set_tied(const CaseSpace& space, std::map<std::string, int64_t>& dims, const std::string& d, int64_t v) {
  dims[d] = v;
  for (const auto& group : space.manifest().equal_dims)
    if (std::find(group.begin(), group.end(), d) != group.end())
      for (const std::string& o : group)
        if (dims.count(o)) dims[o] = v;
}

int64_t small_size(const DimDomain& dom) {
  return std::clamp<int64_t>(3, std::max<int64_t>(dom.min, 1), std::max<int64_t>(dom.max, 1));
}

bool tied(const CaseSpace& space, const std::string& a, const std::string& b) {
  if (a == b) return true;
  for (const auto& group : space.manifest().equal_dims)
    if (std::find(group.begin(), group.end(), a) != group.end() && std::find(group.begin(), group.end(), b) != group.end())
      return true;
  return false;
}

bool make_case(const CaseSpace& space, const Spot& s, Case* c, std::string* why) {
  return space.build(s.dims, s.alt, s.attrs, s.dtype, Distribution::Normal, s.seed, c, why);
}

std::set<std::string> used_dims(const CaseSpace& space, const Spot& s, const Case& base) {
  std::set<std::string> used;
  for (const auto& [d, v] : s.dims) {
    Spot t = s;
    set_tied(space, t.dims, d, v + 1);
    Case c;
    std::string why;
    if (!make_case(space, t, &c, &why) || c.tensors.size() != base.tensors.size()) {
      used.insert(d);
      continue;
    }
    for (size_t i = 0; i < c.tensors.size(); ++i)
      if (c.tensors[i].shape != base.tensors[i].shape || c.tensors[i].high != base.tensors[i].high) used.insert(d);
  }
  return used;
}

namespace {

// The next smaller positive candidate of a dim (the floor stays).
int64_t step_down(const std::vector<int64_t>& candidates, int64_t v) {
  int64_t best = -1;
  for (int64_t c : candidates)
    if (c > 0 && c < v) best = c;
  return best;
}

}  // namespace

bool fit(const CaseSpace& space, const Budget& budget, Spot* s, Case* c, std::string* why) {
  if (!make_case(space, *s, c, why)) {
    bool fixed = false;
    for (const auto& [d, v] : s->dims) {
      Spot t = *s;
      t.dims[d] = std::max<int64_t>(space.limits_for(d).first, 1);
      if (t.dims[d] != v && make_case(space, t, c, why)) {
        *s = t;
        fixed = true;
        break;
      }
    }
    if (!fixed) return false;
  }
  if (within_budget(space.schema(), *c, budget, why)) return true;
  const std::set<std::string> used = used_dims(space, *s, *c);
  std::string focus;
  for (const std::string& d : used)
    if (focus.empty() || s->dims[d] > s->dims[focus]) focus = d;
  for (int guard = 0; guard < 512; ++guard) {
    std::string lower;
    for (const std::string& d : used)
      if (d != focus && step_down(size_candidates(space, d), s->dims[d]) > 0 &&
          (lower.empty() || s->dims[d] > s->dims[lower]))
        lower = d;
    if (lower.empty()) lower = focus;
    const int64_t next = lower.empty() ? -1 : step_down(size_candidates(space, lower), s->dims[lower]);
    if (next <= 0) return (*why = "over the budget even with the other dims at their smallest: " + *why, false);
    s->dims[lower] = next;
    if (!make_case(space, *s, c, why)) return false;
    if (within_budget(space.schema(), *c, budget, why)) return true;
  }
  return false;
}

Spot spot_for(GateContext& ctx, const std::map<std::string, int64_t>& dims, size_t alt, uint64_t k) {
  Spot spot;
  spot.dims = dims;
  spot.alt = alt;
  spot.dtype = ctx.space.dtypes()[k % ctx.space.dtypes().size()];
  uint64_t stride = 1;
  for (const AttrSpec& a : ctx.schema.attributes) {
    const auto choices = attr_choices(a, ctx.manifest, rank_of(ctx.schema, a.dim_of, alt));
    spot.attrs[a.name] = choices[(k / stride) % choices.size()];
    stride *= choices.size();
  }
  return spot;
}

}  // namespace gauntlet::shapes_gate
