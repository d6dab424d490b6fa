// Cases outside the shapes gate's contract: past its limits, ranks, equal dims and fixed sizes; error inputs.
#include "shapes_outside.h"

#include <algorithm>
#include <set>

#include "gauntlet/cases/contract_scope.h"
#include "shapes_spot.h"

namespace gauntlet::shapes_gate {

namespace {

// One gate run's probes outside the contract, seeded under the gate's name, held to the sweep's budget.
struct OutsideProbes {
  GateContext& ctx;
  const std::string& gate;
  const Budget& budget;

  // A dim just past a limit where the manifest narrows the schema.
  void limit_probes(std::vector<Case>* out, std::vector<std::string>* untested) {
    const OpSchema& s = ctx.schema;
    const size_t nalt = s.inputs.empty() ? 1 : s.inputs[0].shapes.size();
    uint64_t k = 0;
    for (const auto& [d, dom] : s.dims) {
      auto lim = ctx.manifest.shapes.find(d);
      if (lim == ctx.manifest.shapes.end()) continue;
      const int64_t schema_lo = dom.zero_allowed ? 0 : dom.min;
      std::vector<std::pair<int64_t, std::string>> probes;
      if (lim->second.max && *lim->second.max < dom.max)
        probes.push_back({*lim->second.max + 1, d + " = " + std::to_string(*lim->second.max + 1) +
                                                    " is above the kernel's declared max " +
                                                    std::to_string(*lim->second.max)});
      if (lim->second.min && *lim->second.min > schema_lo)
        probes.push_back({*lim->second.min - 1, d + " = " + std::to_string(*lim->second.min - 1) +
                                                    " is below the kernel's declared min " +
                                                    std::to_string(*lim->second.min)});
      for (const auto& [size, why_outside] : probes) {
        bool made = false;
        for (size_t a = 0; a < nalt && !made; ++a) {
          std::map<std::string, int64_t> dims;
          for (const auto& [o, odom] : s.dims) {
            const auto [lo, hi] = ctx.space.limits_for(o);
            dims[o] = std::clamp<int64_t>(3, std::max<int64_t>(lo, 1), std::max<int64_t>(hi, 1));
          }
          Spot spot = spot_for(ctx, dims, a, k++);
          // Dims the contract ties to this one move with it (the probe stays equal-dimmed).
          set_tied(ctx.space, spot.dims, d, size);
          spot.seed = ctx.case_seed(gate, 0x0C7000 + k);
          Case c, probe_base;
          std::string why;
          if (!make_case(ctx.space, spot, &c, &why)) continue;
          // The probe dim must change the shapes of this alternative.
          Spot smaller = spot;
          set_tied(ctx.space, smaller.dims, d, size - 1);
          if (!make_case(ctx.space, smaller, &probe_base, &why) || !used_dims(ctx.space, smaller, probe_base).count(d))
            continue;
          if (!within_budget(s, c, budget, &why)) {
            for (auto& [o, v] : spot.dims)
              if (!tied(ctx.space, o, d)) v = std::max<int64_t>(ctx.space.limits_for(o).first, 1);
            if (!make_case(ctx.space, spot, &c, &why)) continue;
            if (!within_budget(s, c, budget, &why)) {
              // Past a fixed size the others need not keep theirs: small (the probe is outside the
              // contract already; it asks only whether this dim past its limit is refused or right).
              for (auto& [o, v] : spot.dims)
                if (!tied(ctx.space, o, d)) v = small_size(s.dims.at(o));
              if (!ctx.space.build_beyond_contract(spot.dims, spot.alt, spot.attrs, spot.dtype, Distribution::Normal,
                                                   spot.seed, &c, &why) ||
                  !within_budget(s, c, budget, &why))
                continue;
            }
          }
          c.label = label_of(c);
          out->push_back(c);
          made = true;
        }
        if (!made) untested->push_back(why_outside + " (no case within the budget)");
      }
    }
  }

  // Probes of the contract's ranks and equal dims: each shape alternative whose rank the kernel
  // does not declare, and each group of equal dims with one of them one larger, the other dims
  // small. Built beyond the contract; each is outside it by construction (checked).
  void contract_probes(std::vector<Case>* out) {
    const OpSchema& s = ctx.schema;
    const KernelManifest& m = ctx.manifest;
    fixed_size_probes(out);
    if (m.ranks.empty() && m.equal_dims.empty()) return;
    std::map<std::string, int64_t> base;
    for (const auto& [d, dom] : s.dims) {
      const auto [lo, hi] = ctx.space.limits_for(d);
      base[d] = std::clamp<int64_t>(3, std::max<int64_t>(lo, 1), std::max<int64_t>(hi, 1));
    }
    AttrMap attrs;
    for (const AttrSpec& a : s.attributes) {
      auto fixed = m.attrs.find(a.name);
      attrs[a.name] = fixed != m.attrs.end() ? fixed->second : a.default_value;
    }
    const size_t nalt = s.inputs.empty() ? 1 : s.inputs[0].shapes.size();
    uint64_t k = 0;
    auto add = [&](const std::map<std::string, int64_t>& dims, size_t alt) {
      const DType dtype = ctx.space.dtypes()[k % ctx.space.dtypes().size()];
      Case c;
      std::string why;
      if (!ctx.space.build_beyond_contract(dims, alt, attrs, dtype, Distribution::Normal,
                                           ctx.case_seed(gate, 0xC0A700 + k++), &c, &why))
        return;
      if (outside_contract_reason(m, c).empty()) return;
      for (const Case& o : *out)
        if (o.dims == c.dims && shape_map(o) == shape_map(c)) return;
      c.label = label_of(c);
      out->push_back(c);
    };
    if (!m.ranks.empty())
      for (size_t alt = 0; alt < nalt; ++alt) add(base, alt);
    for (const auto& group : m.equal_dims)
      for (size_t g = 1; g < group.size(); ++g)
        if (base.count(group[g])) {
          std::map<std::string, int64_t> dims = base;
          for (const std::string& d : group)
            if (dims.count(d)) dims[d] = base[group[0]];
          ++dims[group[g]];
          for (size_t alt = 0; alt < nalt; ++alt) {
            const size_t before = out->size();
            add(dims, alt);
            if (out->size() > before) break;
          }
        }
  }

  // Probes of a contract that fixes dims to one size each (a KernelBench problem's get_inputs()):
  // sizes the schema's domain holds and the contract does not. All fixed dims small at once (3, the
  // smallest odd size past 1), then each fixed dim alone at 1, at a small odd tile hazard (33) and
  // at one below its size, the others at the contract's sizes (small when that is over the budget).
  // A kernel that hard-codes its problem's sizes, or drops their tails, is answered here: it must
  // refuse these or be right (else unsafe), never fail for them.
  void fixed_size_probes(std::vector<Case>* out) {
    const OpSchema& s = ctx.schema;
    std::map<std::string, int64_t> fixed;
    for (const auto& [d, dom] : s.dims) {
      auto lim = ctx.manifest.shapes.find(d);
      if (lim != ctx.manifest.shapes.end() && lim->second.min && lim->second.max && *lim->second.min == *lim->second.max &&
          (dom.max > *lim->second.max || std::max<int64_t>(dom.min, 1) < *lim->second.min))
        fixed[d] = *lim->second.min;
    }
    if (fixed.empty()) return;
    const size_t nalt = s.inputs.empty() ? 1 : s.inputs[0].shapes.size();
    auto in_domain = [&](const std::string& d, int64_t v) {
      const DimDomain& dom = s.dims.at(d);
      return v >= std::max<int64_t>(dom.min, 1) && v <= dom.max;
    };
    uint64_t k = 0;
    auto add = [&](std::map<std::string, int64_t> dims, const std::string& moved) {
      for (int pass = 0; pass < 2; ++pass) {
        if (pass == 1)  // over the budget: every other fixed dim small
          for (auto& [o, v] : dims)
            if (o != moved && fixed.count(o) && !tied(ctx.space, o, moved)) v = small_size(s.dims.at(o));
        for (size_t alt = 0; alt < nalt; ++alt) {
          AttrMap attrs;
          for (const AttrSpec& a : s.attributes) attrs[a.name] = attr_choices(a, ctx.manifest, rank_of(s, a.dim_of, alt)).front();
          const DType dtype = ctx.space.dtypes()[k % ctx.space.dtypes().size()];
          Case c;
          std::string why;
          if (!ctx.space.build_beyond_contract(dims, alt, attrs, dtype, Distribution::Normal,
                                               ctx.case_seed(gate, 0xF1CED0 + k++), &c, &why))
            continue;
          if (outside_contract_reason(ctx.manifest, c).empty()) return;  // the moved dim is not one of this alternative's
          if (!within_budget(s, c, budget, &why)) break;
          for (const Case& o : *out)
            if (shape_map(o) == shape_map(c)) return;
          c.label = label_of(c);
          out->push_back(c);
          return;
        }
      }
    };
    std::map<std::string, int64_t> base;
    for (const auto& [d, dom] : s.dims) base[d] = fixed.count(d) ? fixed[d] : std::max<int64_t>(ctx.space.limits_for(d).first, 1);
    std::map<std::string, int64_t> all_small = base;
    for (const auto& [d, v] : fixed) all_small[d] = small_size(s.dims.at(d));
    add(all_small, "");
    for (const auto& [d, v] : fixed)
      for (int64_t size : {int64_t(1), int64_t(33), v - 1})
        if (size != v && in_domain(d, size)) {
          std::map<std::string, int64_t> dims = base;
          set_tied(ctx.space, dims, d, size);  // a probe of one tied dim stays equal-dimmed
          add(dims, d);
        }
  }

  // The schema's error inputs applied to valid typical cases.
  void error_input_cases(std::vector<Case>* out, std::vector<std::string>* untested) {
    const OpSchema& s = ctx.schema;
    for (size_t e = 0; e < s.error_inputs.size(); ++e) {
      // A Python module fixes its attributes at construction (docs/modules.md): an attribute
      // override cannot reach it, so such error inputs are not sent.
      if (is_python_module(ctx.manifest) && !s.error_inputs[e].attr_overrides.empty()) {
        untested->push_back("error input '" + s.error_inputs[e].description +
                            "' (it overrides an attribute, which a Python module fixes at construction)");
        continue;
      }
      // Two base cases per error input (more with --budget), over different sizes and dtypes.
      int made = 0;
      for (uint64_t variant = 0; variant < 64 && made < 2 * ctx.budget; ++variant) {
        Case c;
        if (error_case(s.error_inputs[e], variant, uint64_t(made) + e, &c)) {
          out->push_back(c);
          ++made;
        }
      }
      if (made == 0) untested->push_back("error input '" + s.error_inputs[e].description + "'");
    }
  }

  // Applies an error input's overrides to a valid typical case; false when the base case does not
  // meet the error input's constraints or an override does not evaluate.
  bool error_case(const ErrorInput& ei, uint64_t variant, uint64_t rotate, Case* out) {
    const DType dtype = ctx.space.dtypes()[rotate % ctx.space.dtypes().size()];
    Case c;
    std::string why;
    const uint64_t seed = ctx.case_seed(gate, 0xE7700 + variant * 131 + rotate);
    if (!ctx.space.typical_case(variant, dtype, Distribution::Normal, seed, &c, &why)) return false;
    const auto vars = expr_vars(c);
    const ShapeMap shapes = shape_map(c);
    for (const std::string& con : ei.constraints) {
      auto r = eval_expr(con, vars, shapes, &why);
      if (!r || *r == 0) return false;
    }
    for (const auto& [input, pattern] : ei.shape_overrides) {
      TensorRecipe* r = nullptr;
      for (TensorRecipe& t : c.tensors)
        if (t.name == input) r = &t;
      if (!r) return false;
      std::vector<int64_t> shape;
      for (const std::string& e : pattern) {
        auto v = eval_expr(e, vars, shapes, &why);
        if (!v || *v < 0) return false;
        shape.push_back(*v);
      }
      r->shape = shape;
    }
    for (const auto& [input, dom] : ei.value_overrides) {
      TensorRecipe* r = nullptr;
      for (TensorRecipe& t : c.tensors)
        if (t.name == input) r = &t;
      if (!r) return false;
      // The override replaces the input's whole value domain: an offsets input given plain
      // integers draws them unsorted, and offsets given another total end there.
      if (dom.kind == "index" || dom.kind == "integer" || dom.kind == "key") {
        auto lo = eval_expr(dom.low.empty() ? "0" : dom.low, vars, shapes, &why);
        auto hi = eval_expr(dom.below, vars, shapes, &why);
        if (!lo || !hi || *hi <= *lo) return false;
        r->distribution = Distribution::Index;
        r->low = *lo;
        r->high = *hi;
        r->offsets = false;
        r->sorted = dom.sorted;
        r->spread = dom.kind == "key" ? spread_from_name(dom.distribution).value_or(Spread::Uniform) : Spread::Uniform;
        r->alpha = dom.kind == "key" ? dom.alpha.value_or(0.0) : 0.0;
      } else if (dom.kind == "offsets") {
        // Monotone offsets from 0 to another total (N + 1: past x's rows; N - 1: rows left over).
        auto total = eval_expr(dom.total, vars, shapes, &why);
        if (!total || *total < 0) return false;
        r->distribution = Distribution::Index;
        r->offsets = true;
        r->low = 0;
        r->high = *total;
        if (!dom.distribution.empty()) r->spread = spread_from_name(dom.distribution).value_or(Spread::Uniform);
        if (dom.alpha) r->alpha = *dom.alpha;
      } else {
        r->distribution = Distribution::Normal;
        r->offsets = false;
        r->positive = dom.kind == "positive" || dom.kind == "nonnegative";
      }
    }
    for (const auto& [input, dt] : ei.dtype_overrides)
      for (TensorRecipe& t : c.tensors)
        if (t.name == input) t.dtype = dt;
    for (const auto& [a, v] : ei.attr_overrides) c.attrs[a] = v;
    c.label = label_of(c);
    c.outside_contract = ei.description;
    *out = c;
    return true;
  }
};

}  // namespace

// A Python module takes its attributes at construction (docs/modules.md): a probe that moves a dim
// an attribute is the size of (AttrSpec::size_of: group_by_sum's num_groups, scatter_add's size)
// past the contract asks it about a length it is never told, so any answer would be its
// constructor's. Such probes are dropped and named as untested.
namespace {

void drop_unheard_attribute_probes(const GateContext& ctx, std::vector<Case>* cases, std::vector<std::string>* untested) {
  std::set<std::string> noted;
  auto unheard = [&](const Case& c) {
    for (const AttrSpec& a : ctx.schema.attributes) {
      if (a.size_of.empty() || !c.attrs.count(a.name)) continue;
      const auto [lo, hi] = ctx.space.limits_for(a.size_of);
      const double v = attr_as_double(c.attrs.at(a.name));
      if (v >= double(lo) && v <= double(hi)) continue;
      if (noted.insert(a.name).second)
        untested->push_back(a.size_of + " outside the contract (" + a.name + " = " + attr_to_string(c.attrs.at(a.name)) +
                            "): a Python module receives " + a.name + " only at construction");
      return true;
    }
    return false;
  };
  cases->erase(std::remove_if(cases->begin(), cases->end(), unheard), cases->end());
}

}  // namespace

std::vector<Case> outside_cases(GateContext& ctx, const std::string& gate, const Budget& budget,
                                std::vector<std::string>* untested) {
  OutsideProbes probes{ctx, gate, budget};
  std::vector<Case> out;
  probes.limit_probes(&out, untested);
  probes.contract_probes(&out);
  probes.error_input_cases(&out, untested);
  if (is_python_module(ctx.manifest)) drop_unheard_attribute_probes(ctx, &out, untested);
  return out;
}

}  // namespace gauntlet::shapes_gate
