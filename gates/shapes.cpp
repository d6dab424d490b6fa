// Gate 5, shapes: held-out sizes inside the kernel's contract judged against the oracle, and inputs outside it rejected.
#include <algorithm>
#include <chrono>
#include <set>

#include "gauntlet/cases/case_cost.h"
#include "gauntlet/cases/contract_scope.h"
#include "gauntlet/cases/gate.h"
#include "gauntlet/cases/judge.h"
#include "gauntlet/oracle/module_oracle.h"
#include "gauntlet/cases/property.h"

namespace gauntlet {

// Size candidates and the case budget; tests/gates/shapes_test.cpp declares these again to test them.
namespace shapes_gate {

// Per-case caps. `elements` bounds every input and output tensor, `flops` the schema's cost.flops
// (the fp64 oracle and a naive kernel both scale with it). Measured on a 2-core CPU, a case costs
// about 1.5 ms plus 0.3 us per element (generation, oracle, kernel, transfer, judging), so the caps
// keep a whole gate run on a control in a few tenths of a second at budget 1.
struct Budget {
  int64_t elements = 0;
  int64_t flops = 0;
};
// One dim at a held-out size (up to the largest declared), the other dims small.
Budget sweep_budget(int budget) { return {(int64_t(1) << 17) * budget, (int64_t(1) << 21) * budget}; }
// Several dims at held-out sizes at once (the RapidCheck search).
Budget combo_budget(int budget) { return {(int64_t(1) << 13) * budget, (int64_t(1) << 18) * budget}; }

// Held-out sizes of one dim inside the contract, ascending (RapidCheck shrinks toward the first):
// 0 where the schema allows it, 1 (or the contract's minimum), small and large primes, tile edges
// and their neighbours, the schema's hazards, and the largest declared size.
std::vector<int64_t> size_candidates(const CaseSpace& space, const std::string& dim) {
  static const int64_t kPrimes[] = {2, 3, 5, 7, 13, 31, 61, 127, 251, 509, 1021, 2039, 4093, 8191};
  static const int64_t kTiles[] = {8, 16, 32, 64, 128, 256, 512, 1024};
  const auto [lo, hi] = space.limits_for(dim);
  const int64_t floor = std::max<int64_t>(lo, 1);
  std::set<int64_t> s;
  auto add = [&](int64_t v) {
    if (v >= floor && v <= hi) s.insert(v);
  };
  if (lo == 0 && hi >= 0) s.insert(0);
  add(1);
  add(floor);
  for (int64_t p : kPrimes) add(p);
  for (int64_t t : kTiles) {
    add(t - 1);
    add(t);
    add(t + 1);
  }
  auto it = space.schema().dims.find(dim);
  if (it != space.schema().dims.end())
    for (int64_t h : it->second.hazards) add(h);
  add(hi);
  return {s.begin(), s.end()};
}

namespace {

int64_t numel_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n = std::min<int64_t>(n * std::max<int64_t>(s, 0), int64_t(1) << 50);
  return n;
}

std::map<std::string, int64_t> expr_vars(const Case& c) {
  std::map<std::string, int64_t> vars = c.dims;
  for (const auto& [k, v] : c.attrs) {
    if (std::holds_alternative<int64_t>(v)) vars[k] = std::get<int64_t>(v);
    else if (std::holds_alternative<bool>(v)) vars[k] = std::get<bool>(v) ? 1 : 0;
  }
  vars["elem_size"] = c.tensors.empty() ? 4 : dtype_size(c.tensors[0].dtype);
  return vars;
}

ShapeMap shape_map(const Case& c) {
  ShapeMap m;
  for (const TensorRecipe& r : c.tensors) m[r.name] = r.shape;
  return m;
}

const TensorRecipe* tensor(const Case& c, const std::string& name) {
  for (const TensorRecipe& r : c.tensors)
    if (r.name == name) return &r;
  return nullptr;
}

// Element count of each output by its shape rule (-1 where it cannot be known before running).
std::vector<int64_t> output_numels(const OpSchema& schema, const Case& c) {
  std::vector<int64_t> out;
  const auto vars = expr_vars(c);
  const ShapeMap shapes = shape_map(c);
  for (const OutputSpec& o : schema.outputs) {
    int64_t n = -1;
    const std::string& r = o.shape_rule;
    if (!o.dims.empty()) {
      n = 1;
      for (const std::string& e : o.dims) {
        std::string why;
        auto v = e == "?" ? std::nullopt : eval_expr(e, vars, shapes, &why);
        if (!v) {
          n = -1;
          break;
        }
        n = std::min<int64_t>(n * std::max<int64_t>(*v, 0), int64_t(1) << 50);
      }
    } else if (r == "scalar") {
      n = 1;
    } else if (r.rfind("same:", 0) == 0) {
      if (const TensorRecipe* t = tensor(c, r.substr(5))) n = numel_of(t->shape);
    } else if (r.rfind("reduce:", 0) == 0) {
      // Never larger than the input it reduces.
      const size_t colon = r.find(':', 7);
      if (const TensorRecipe* t = tensor(c, r.substr(7, colon == std::string::npos ? std::string::npos : colon - 7)))
        n = numel_of(t->shape);
    } else if (r.rfind("broadcast:", 0) == 0) {
      std::vector<int64_t> b;
      std::string list = r.substr(10);
      size_t start = 0;
      while (start <= list.size()) {
        const size_t comma = list.find(',', start);
        const std::string name = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (const TensorRecipe* t = tensor(c, name)) {
          if (t->shape.size() > b.size()) b.insert(b.begin(), t->shape.size() - b.size(), 1);
          for (size_t i = 0; i < t->shape.size(); ++i) {
            int64_t& dst = b[b.size() - t->shape.size() + i];
            dst = std::max(dst, t->shape[i]);
          }
        }
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
      n = numel_of(b);
    }
    out.push_back(n);
  }
  return out;
}

}  // namespace

// True when every tensor of the case and its oracle work fit the budget; *why says what does not.
bool within_budget(const OpSchema& schema, const Case& c, const Budget& b, std::string* why) {
  for (const TensorRecipe& r : c.tensors)
    if (numel_of(r.shape) > b.elements)
      return (*why = "input " + r.name + " has " + std::to_string(numel_of(r.shape)) + " elements", false);
  const auto outs = output_numels(schema, c);
  for (size_t i = 0; i < outs.size(); ++i)
    if (outs[i] > b.elements)
      return (*why = "output " + schema.outputs[i].name + " has " + std::to_string(outs[i]) + " elements", false);
  if (!schema.flops.empty()) {
    std::string error;
    auto f = eval_expr(schema.flops, expr_vars(c), shape_map(c), &error);
    if (f && *f > b.flops) return (*why = "the oracle's work is " + std::to_string(*f) + " flops", false);
  }
  return true;
}

// The budget that admits `c` and everything `b` admits: a contract of exact sizes larger than the
// gate's caps (a KernelBench problem's get_inputs()) still runs its own shape.
Budget raised_to(const OpSchema& schema, const Case& c, Budget b) {
  for (const TensorRecipe& r : c.tensors) b.elements = std::max(b.elements, numel_of(r.shape));
  for (int64_t n : output_numels(schema, c)) b.elements = std::max(b.elements, n);
  if (!schema.flops.empty()) {
    std::string error;
    if (auto f = eval_expr(schema.flops, expr_vars(c), shape_map(c), &error)) b.flops = std::max(b.flops, *f);
  }
  return b;
}

}  // namespace shapes_gate

namespace {

using shapes_gate::Budget;
using shapes_gate::expr_vars;
using shapes_gate::shape_map;
using shapes_gate::size_candidates;
using shapes_gate::within_budget;

// The case's label after its shapes or attributes were overridden (as CaseSpace::build writes it).
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

// The choices of one attribute for a case whose input `dim_of` has rank `rank`; the first is the
// default (or the manifest's fixed value), so RapidCheck shrinks toward it.
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

// The rank input `name` takes in shape alternative `alt` (the first input takes `alt`).
int64_t rank_of(const OpSchema& s, const std::string& name, size_t alt) {
  for (size_t i = 0; i < s.inputs.size(); ++i)
    if (s.inputs[i].name == name && !s.inputs[i].shapes.empty())
      return int64_t(s.inputs[i].shapes[i == 0 ? alt % s.inputs[i].shapes.size() : 0].size());
  return 1;
}

// Everything that determines an in-contract case.
struct Spot {
  std::map<std::string, int64_t> dims;
  size_t alt = 0;
  AttrMap attrs;
  DType dtype = DType::Float32;
  uint64_t seed = 0;
};

// Sets dim `d` and every dim the kernel's contract declares equal to it (equal_dims): a square
// matmul's held-out sizes move M, K and N together, where CaseSpace::build would take their smallest.
void set_tied(const CaseSpace& space, std::map<std::string, int64_t>& dims, const std::string& d, int64_t v) {
  dims[d] = v;
  for (const auto& group : space.manifest().equal_dims)
    if (std::find(group.begin(), group.end(), d) != group.end())
      for (const std::string& o : group)
        if (dims.count(o)) dims[o] = v;
}

// A small size of a dim's schema domain (3, the smallest odd size past 1, where the domain holds
// it): the other dims of a probe that lies outside the contract already.
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

// Dims that change the case (perturbing one changes a shape or an index range): the others are
// free and must not count as "the large dim" or be cut down.
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

// The next smaller positive candidate of a dim (the floor stays).
int64_t step_down(const std::vector<int64_t>& candidates, int64_t v) {
  int64_t best = -1;
  for (int64_t c : candidates)
    if (c > 0 && c < v) best = c;
  return best;
}

// Makes `s` a valid case within `budget`: a violated schema constraint (conv2d's kernel larger than
// the padded input) lowers one dim to its floor; then the largest used dim keeps its size while the
// others are cut down through their candidates, and only then the largest itself.
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

class ShapesGate : public Gate {
 public:
  std::string name() const override { return "shapes"; }

  GateVerdict run(GateContext& ctx) override {
    if (is_module_schema(ctx.schema)) {
      GateVerdict v = skipped();
      v.message = module_skip_reason(name());
      return v;
    }
    SessionHolder holder(ctx, name());
    stopped_ = false;
    int cases = 0, evidence = 0;
    auto count = [&](const GateVerdict& v, bool vacuous) {
      ++cases;
      if (v.status == Status::Pass && !vacuous) ++evidence;
    };

    // A contract of exact sizes (every dim fixed, as a KernelBench problem's get_inputs() fixes
    // them) has one in-contract shape: the search runs it a few times (values and seeds vary) at
    // whatever it costs, and the sizes around it are probed outside the contract (step 3).
    floor_ = contract_floor(ctx);
    const bool one_shape = every_dim_fixed(ctx);
    const Budget combo = floor_.tensors.empty() ? shapes_gate::combo_budget(ctx.budget)
                                                : shapes_gate::raised_to(ctx.schema, floor_, shapes_gate::combo_budget(ctx.budget));
    PropertyOutcome prop = run_property(
        ctx, name(), one_shape ? kMinCasesAtFloor : 24 * ctx.budget, [&] { return pick(ctx, combo); },
        [&](const Case& c) {
          if (c.tensors.empty()) return skipped();  // no valid case from these draws
          bool vacuous = false;
          GateVerdict v = check_in_contract(ctx, holder, c, &vacuous);
          count(v, vacuous);
          return v;
        });
    if (prop.failed) return shrunk_verdict(prop.verdict, prop.cases, prop.shrink_steps);

    // 2. Every candidate size of every dim at least once, the other dims small: guarantees each
    //    held-out size (up to the largest declared that fits the budget) is judged.
    std::vector<std::string> over_budget;
    GateVerdict swept = sweep(ctx, holder, &cases, &evidence, &over_budget);
    if (swept.status != Status::Pass) return swept;

    // 3. Outside the contract: shapes past the manifest's limits, then the schema's error inputs.
    int rejected = 0;
    std::vector<std::string> untested;
    int answered = 0;  // probes outside the contract that the kernel answered right (as it may)
    for (Case& c : outside_cases(ctx, &untested)) {
      c.index = uint64_t(cases);
      if (!c.outside_contract.empty()) {  // an error input: the op itself has no answer
        GateVerdict v = check_outside(ctx, holder, c);
        ++cases;
        if (v.status != Status::Pass) return v;
        ++rejected;
        continue;
      }
      // Past the contract the op still has an answer: refusing it or giving it both pass.
      bool vacuous = false;
      GateVerdict v = check_in_contract(ctx, holder, c, &vacuous);
      ++cases;
      if (v.status != Status::Pass) return v;
      if (v.evidence.value("refused_outside_contract", false)) ++rejected;
      else ++answered;
    }

    GateVerdict v;
    v.name = name();
    v.cases = cases;
    if (evidence == 0) {
      v.status = Status::HarnessError;
      v.category = Category::HarnessError;
      v.message = "no held-out shape gave a non-constant reference output: nothing was verified";
      return v;
    }
    v.message = std::to_string(evidence) + " held-out shapes within tolerance";
    if (cases - rejected > evidence)
      v.message += " (" + std::to_string(cases - rejected - evidence) + " empty or constant not counted)";
    v.message += ", " + std::to_string(rejected) + " inputs outside the contract rejected";
    if (answered > 0) v.message += ", " + std::to_string(answered) + " outside the contract answered within tolerance";
    if (!over_budget.empty()) {
      v.message += "; above the case budget (--budget raises it):";
      for (const std::string& s : over_budget) v.message += " " + s;
    }
    for (size_t i = 0; i < untested.size(); ++i) v.message += (i ? ", " : "; not generated: ") + untested[i];
    v.evidence["cases"] = cases;
    v.evidence["evidence_cases"] = evidence;
    v.evidence["rejected_outside_contract"] = rejected;
    v.evidence["answered_outside_contract"] = answered;
    v.evidence["over_budget"] = over_budget;
    return v;
  }

  GateVerdict check_one(GateContext& ctx, const Case& c) override {
    SessionHolder holder(ctx, name());
    stopped_ = false;
    if (!c.outside_contract.empty()) return check_outside(ctx, holder, c);
    bool vacuous = false;
    return check_in_contract(ctx, holder, c, &vacuous);
  }

 private:
  // After a timeout every further case would cost the whole wall-clock limit again: the search
  // stops and keeps the case that hung.
  bool stopped_ = false;

  GateVerdict skipped() const {
    GateVerdict v;
    v.name = name();
    v.status = Status::Skip;
    return v;
  }

  // The contract's smallest case (every dim at its lower limit), empty when none builds.
  Case floor_;

  Case contract_floor(GateContext& ctx) const {
    std::map<std::string, int64_t> dims;
    for (const auto& [d, dom] : ctx.schema.dims) dims[d] = std::max<int64_t>(ctx.space.limits_for(d).first, 1);
    const size_t nalt = ctx.schema.inputs.empty() ? 1 : ctx.schema.inputs[0].shapes.size();
    for (size_t a = 0; a < nalt; ++a) {
      Case c;
      std::string why;
      if (make_case(ctx.space, spot_for(ctx, dims, a, 0), &c, &why)) return c;  // first dtype and attribute choices
    }
    return Case{};
  }

  // Whether the contract fixes every dim the schema's inputs use to one size.
  static bool every_dim_fixed(GateContext& ctx) {
    for (const auto& [d, dom] : ctx.schema.dims) {
      const auto [lo, hi] = ctx.space.limits_for(d);
      if (lo != hi) return false;
    }
    return true;
  }

  // The sweep's budget: its usual caps, raised to the contract's smallest case.
  Budget sweep_caps(GateContext& ctx) const {
    const Budget b = shapes_gate::sweep_budget(ctx.budget);
    return floor_.tensors.empty() ? b : shapes_gate::raised_to(ctx.schema, floor_, b);
  }

  // A case from RapidCheck draws: shape alternative, one candidate per dim, dtype, attributes.
  Case pick(GateContext& ctx, const Budget& budget) {
    const OpSchema& s = ctx.schema;
    Spot spot;
    spot.alt = size_t(pick_index(s.inputs.empty() ? 1 : int64_t(s.inputs[0].shapes.size())));
    spot.dims = pick_dims(ctx.space, [&](const std::string& d) { return size_candidates(ctx.space, d); });
    spot.dtype = ctx.space.dtypes()[size_t(pick_index(int64_t(ctx.space.dtypes().size())))];
    for (const AttrSpec& a : s.attributes) {
      const auto choices = attr_choices(a, ctx.manifest, rank_of(s, a.dim_of, spot.alt));
      spot.attrs[a.name] = choices[size_t(pick_index(int64_t(choices.size())))];
    }
    spot.seed = pick_seed();
    Case c;
    std::string why;
    if (!fit(ctx.space, budget, &spot, &c, &why)) return Case{};
    return c;
  }

  GateVerdict shrunk_verdict(GateVerdict v, int cases, int shrink_steps) const {
    if (v.status == Status::Fail || v.status == Status::Error)
      v.message += " (smallest failing shape after " + std::to_string(cases) + " cases and " +
                   std::to_string(shrink_steps) + " shrink steps)";
    v.evidence["cases_before_failure"] = cases;
    v.evidence["shrink_steps"] = shrink_steps;
    return v;
  }

  // One dim at a time through its candidates, the others at a small size (3, or their floor when
  // the budget or a constraint needs it). Dtype, shape alternative and attributes rotate per case.
  GateVerdict sweep(GateContext& ctx, SessionHolder& holder, int* cases, int* evidence,
                    std::vector<std::string>* over_budget) {
    const OpSchema& s = ctx.schema;
    const Budget budget = sweep_caps(ctx);
    const size_t nalt = s.inputs.empty() ? 1 : s.inputs[0].shapes.size();
    std::map<std::string, int64_t> base;
    for (const auto& [d, dom] : s.dims) {
      const auto [lo, hi] = ctx.space.limits_for(d);
      base[d] = std::clamp<int64_t>(3, std::max<int64_t>(lo, 1), std::max<int64_t>(hi, 1));
    }
    uint64_t k = 0;
    bool swept_fixed = false;  // the dims fixed to one size all sweep the same case: run it once
    for (const auto& [d, dom] : s.dims) {
      if (const auto [lo, hi] = ctx.space.limits_for(d); lo == hi) {
        if (swept_fixed) continue;
        swept_fixed = true;
      }
      // The alternatives whose shapes this dim changes (rank variants of the first input).
      std::vector<size_t> alts;
      for (size_t a = 0; a < nalt; ++a) {
        Spot probe = spot_for(ctx, base, a, 0);
        Case c;
        std::string why;
        if (make_case(ctx.space, probe, &c, &why) && used_dims(ctx.space, probe, c).count(d)) alts.push_back(a);
      }
      if (alts.empty()) continue;
      for (int64_t size : size_candidates(ctx.space, d)) {
        Spot spot = spot_for(ctx, base, alts[k % alts.size()], k);
        set_tied(ctx.space, spot.dims, d, size);
        spot.seed = ctx.case_seed(name(), 0x5EE9000 + k);
        ++k;
        Case c;
        std::string why;
        if (!make_case(ctx.space, spot, &c, &why) || !within_budget(s, c, budget, &why)) {
          // The others to their floor (1): the largest size of one dim with every other dim minimal.
          for (auto& [o, v] : spot.dims)
            if (!tied(ctx.space, o, d)) v = std::max<int64_t>(ctx.space.limits_for(o).first, 1);
          if (!make_case(ctx.space, spot, &c, &why)) continue;
          if (!within_budget(s, c, budget, &why)) {
            // Candidates ascend: report the smallest size of each dim left out.
            const std::string note = d + ">=" + std::to_string(size);
            if (over_budget->empty() || over_budget->back().rfind(d + ">=", 0) != 0) over_budget->push_back(note);
            continue;
          }
        }
        c.index = uint64_t(*cases);
        bool vacuous = false;
        GateVerdict v = check_in_contract(ctx, holder, c, &vacuous);
        ++*cases;
        if (v.status == Status::Pass && !vacuous) ++*evidence;
        if (v.status == Status::Fail || v.status == Status::Error) return shrink_sweep(ctx, holder, spot, v);
        if (v.status == Status::HarnessError) return v;
      }
    }
    GateVerdict v;
    v.name = name();
    return v;
  }

  Spot spot_for(GateContext& ctx, const std::map<std::string, int64_t>& dims, size_t alt, uint64_t k) const {
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

  // A sweep failure was not drawn by RapidCheck, so it is shrunk here the same way: toward the first
  // dtype and the first attribute choices, then each dim in turn tries its smaller candidates
  // smallest first and keeps the first that still fails.
  GateVerdict shrink_sweep(GateContext& ctx, SessionHolder& holder, Spot spot, GateVerdict failing) {
    int steps = 0;
    auto still_fails = [&](const Spot& t) {
      Case c;
      std::string why;
      if (!make_case(ctx.space, t, &c, &why)) return false;
      ++steps;
      bool vacuous = false;
      GateVerdict r = check_in_contract(ctx, holder, c, &vacuous);
      if (r.status != Status::Fail && r.status != Status::Error) return false;
      failing = r;
      return true;
    };
    Spot simpler = spot;
    simpler.dtype = ctx.space.dtypes().front();
    for (const AttrSpec& a : ctx.schema.attributes)
      simpler.attrs[a.name] = attr_choices(a, ctx.manifest, rank_of(ctx.schema, a.dim_of, spot.alt)).front();
    if ((simpler.dtype != spot.dtype || simpler.attrs != spot.attrs) && still_fails(simpler)) spot = simpler;
    bool changed = true;
    while (changed && steps < 200 && !stopped_) {
      changed = false;
      for (auto& [d, v] : spot.dims) {
        for (int64_t smaller : size_candidates(ctx.space, d)) {
          if (smaller >= v || steps >= 200 || stopped_) break;
          Spot t = spot;
          set_tied(ctx.space, t.dims, d, smaller);
          if (still_fails(t)) {
            spot = t;
            changed = true;
            break;
          }
        }
      }
    }
    // The replay file on disk is the last failure's; rewrite it for the smallest.
    if (steps > 0) {
      Case c;
      std::string why;
      if (make_case(ctx.space, spot, &c, &why)) {
        bool vacuous = false;
        GateVerdict again = check_in_contract(ctx, holder, c, &vacuous);
        if (again.status == failing.status) failing = again;
      }
    }
    return shrunk_verdict(failing, 0, steps);
  }

  // Judges one in-contract case against the oracle under the schema's tolerance.
  GateVerdict check_in_contract(GateContext& ctx, SessionHolder& holder, const Case& c, bool* vacuous) {
    *vacuous = true;
    if (stopped_) return skipped();
    GateVerdict failed;
    WorkerSession* session = holder.get(&failed);
    if (!session) return failed;
    CaseRun run = run_case(ctx, *session, c);
    GateVerdict v;
    v.name = name();
    v.cases = 1;
    note_outputs(v, run);
    if (run.outcome.kind != Outcome::Kind::Ok) {
      after_failure(holder, run.outcome.kind);
      v = verdict_from_outcome(ctx, name(), run);
      v.cases = 1;
      if (v.status != Status::HarnessError) v.replay = write_replay(ctx, name(), run, v);
      return v;
    }
    const DType case_dtype = c.tensors.at(0).dtype;
    auto tol = ctx.schema.tolerance.find(case_dtype);
    if (tol == ctx.schema.tolerance.end()) {
      v.status = Status::HarnessError;
      v.category = Category::HarnessError;
      v.message = std::string("the schema declares no tolerance for ") + dtype_name(case_dtype);
      return v;
    }
    const wire::CallOutputs& got = run.outcome.reply.calls.at(0);
    const int64_t K = reduction_terms(ctx.schema, c);
    // Output count and exact shape are the contract gate's; an element count that differs is a
    // wrong result here (judge_output reports it).
    for (size_t i = 0; i < run.oracle.outputs.size() && i < got.outputs.size(); ++i) {
      const std::string oname = i < ctx.schema.outputs.size() ? ctx.schema.outputs[i].name : "output";
      const at::Tensor scale = i < run.oracle.scales.size() ? run.oracle.scales[i] : at::Tensor();
      Judgement j = judge_output(oname, got.outputs[i], run.oracle.outputs[i], scale,
                                 expected_output_dtype(ctx.schema, i, c), tol->second, K);
      if (!j.vacuous) *vacuous = false;
      if (!j.pass) {
        v.status = Status::Fail;
        v.category = Category::WrongResult;
        v.message = "case " + c.label + ": " + j.message;
        v.evidence = {{"got", j.got},        {"expected", j.expected}, {"error", j.error},
                      {"allowed", j.allowed}, {"bad_elements", j.bad},  {"elements", j.checked},
                      {"dims", c.dims}};
        v.replay = write_replay(ctx, name(), run, v);
        return v;
      }
    }
    return v;
  }

  void after_failure(SessionHolder& holder, Outcome::Kind kind) {
    // A crash, a timeout or an exhausted memory limit leaves no usable child.
    if (kind == Outcome::Kind::Died || kind == Outcome::Kind::TimedOut || kind == Outcome::Kind::OutOfMemory)
      holder.reset();
    if (kind == Outcome::Kind::TimedOut) stopped_ = true;
  }

  // Runs a case the kernel must reject, without the oracle (it rejects such inputs too).
  GateVerdict check_outside(GateContext& ctx, SessionHolder& holder, const Case& c) {
    if (stopped_) return skipped();
    GateVerdict failed;
    WorkerSession* session = holder.get(&failed);
    if (!session) return failed;
    CaseRun run;
    run.c = c;
    note_case_scope(ctx, c);
    const auto t0 = std::chrono::steady_clock::now();
    run.inputs = materialize_all(c);
    const auto t1 = std::chrono::steady_clock::now();
    wire::CaseRequest req;
    req.case_id = c.index;
    req.args = make_args(ctx.schema, run.inputs, c.attrs);
    run.outcome = session->call(req);
    // Accounted like run_case's (verify reports where a gate's time goes).
    ctx.timing.inputs += std::chrono::duration<double>(t1 - t0).count();
    ctx.timing.call += std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
    ctx.timing.kernel += run.outcome.reply.kernel_seconds;
    GateVerdict v;
    v.name = name();
    v.cases = 1;
    note_outputs(v, run);
    if (run.outcome.kind == Outcome::Kind::KernelError) return v;  // rejected, as it must be
    if (run.outcome.kind == Outcome::Kind::Ok) {
      v.status = Status::Fail;
      v.category = Category::WrongResult;
      v.message = "case " + c.label + ": returned values for an input outside its contract (" + c.outside_contract + ")";
    } else {
      after_failure(holder, run.outcome.kind);
      v = verdict_from_outcome(ctx, name(), run);
      v.cases = 1;
      v.message += " (an input outside the contract: " + c.outside_contract + ")";
    }
    if (v.status != Status::HarnessError) v.replay = write_replay(ctx, name(), run, v);
    return v;
  }

  // Cases outside the contract: (a) a dim just past a limit where the manifest narrows the schema,
  // (b) the schema's error inputs applied to valid typical cases.
  std::vector<Case> outside_cases(GateContext& ctx, std::vector<std::string>* untested) {
    std::vector<Case> out;
    const OpSchema& s = ctx.schema;
    const Budget budget = sweep_caps(ctx);
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
          spot.seed = ctx.case_seed(name(), 0x0C7000 + k);
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
          out.push_back(c);
          made = true;
        }
        if (!made) untested->push_back(why_outside + " (no case within the budget)");
      }
    }
    contract_probes(ctx, &out);
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
        if (error_case(ctx, s.error_inputs[e], variant, uint64_t(made) + e, &c)) {
          out.push_back(c);
          ++made;
        }
      }
      if (made == 0) untested->push_back("error input '" + s.error_inputs[e].description + "'");
    }
    return out;
  }

  // Probes of the contract's ranks and equal dims: each shape alternative whose rank the kernel
  // does not declare, and each group of equal dims with one of them one larger, the other dims
  // small. Built beyond the contract; each is outside it by construction (checked).
  void contract_probes(GateContext& ctx, std::vector<Case>* out) {
    const OpSchema& s = ctx.schema;
    const KernelManifest& m = ctx.manifest;
    fixed_size_probes(ctx, out);
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
                                           ctx.case_seed(name(), 0xC0A700 + k++), &c, &why))
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
  void fixed_size_probes(GateContext& ctx, std::vector<Case>* out) {
    const OpSchema& s = ctx.schema;
    std::map<std::string, int64_t> fixed;
    for (const auto& [d, dom] : s.dims) {
      auto lim = ctx.manifest.shapes.find(d);
      if (lim != ctx.manifest.shapes.end() && lim->second.min && lim->second.max && *lim->second.min == *lim->second.max &&
          (dom.max > *lim->second.max || std::max<int64_t>(dom.min, 1) < *lim->second.min))
        fixed[d] = *lim->second.min;
    }
    if (fixed.empty()) return;
    const Budget budget = sweep_caps(ctx);
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
                                               ctx.case_seed(name(), 0xF1CED0 + k++), &c, &why))
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

  // Applies an error input's overrides to a valid typical case; false when the base case does not
  // meet the error input's constraints or an override does not evaluate.
  bool error_case(GateContext& ctx, const ErrorInput& ei, uint64_t variant, uint64_t rotate, Case* out) {
    const DType dtype = ctx.space.dtypes()[rotate % ctx.space.dtypes().size()];
    Case c;
    std::string why;
    const uint64_t seed = ctx.case_seed(name(), 0xE7700 + variant * 131 + rotate);
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
      if (dom.kind == "index" || dom.kind == "integer" || dom.kind == "key") {
        auto lo = eval_expr(dom.low.empty() ? "0" : dom.low, vars, shapes, &why);
        auto hi = eval_expr(dom.below, vars, shapes, &why);
        if (!lo || !hi || *hi <= *lo) return false;
        r->distribution = Distribution::Index;
        r->low = *lo;
        r->high = *hi;
      } else {
        r->distribution = Distribution::Normal;
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

std::unique_ptr<Gate> make_shapes_gate() { return std::make_unique<ShapesGate>(); }

}  // namespace gauntlet
