// Case cost and the per-gate case budget (include/gauntlet/cases/case_cost.h).
#include "gauntlet/cases/case_cost.h"

#include <algorithm>
#include <map>
#include <variant>

namespace gauntlet {

std::map<std::string, int64_t> case_int_vars(const Case& c) {
  std::map<std::string, int64_t> vars = c.dims;
  for (const auto& [k, v] : c.attrs)
    if (!std::holds_alternative<double>(v)) vars[k] = std::holds_alternative<bool>(v) ? std::get<bool>(v) : std::get<int64_t>(v);
  vars["elem_size"] = c.tensors.empty() ? 4 : dtype_size(c.tensors[0].dtype);
  return vars;
}

std::vector<std::pair<std::string, int64_t>> case_tensor_numels(const OpSchema& schema, const Case& c) {
  std::vector<std::pair<std::string, int64_t>> out;
  ShapeMap shapes;
  for (const TensorRecipe& r : c.tensors) {
    int64_t n = 1;
    for (int64_t s : r.shape) n *= s;
    out.push_back({r.name, n});
    shapes[r.name] = r.shape;
  }
  std::string error;
  const auto vars = case_int_vars(c);
  for (const OutputSpec& o : schema.outputs) {
    if (o.dims.empty()) continue;
    int64_t n = 1;
    for (const std::string& e : o.dims) {
      auto v = eval_expr(e, vars, shapes, &error);
      n *= v ? std::max<int64_t>(*v, 0) : 0;
    }
    out.push_back({"output " + o.name, n});
  }
  return out;
}

int64_t case_cost(const OpSchema& schema, const Case& c) {
  int64_t cost = 0;
  for (const auto& [name, n] : case_tensor_numels(schema, c)) cost += n;
  ShapeMap shapes;
  for (const TensorRecipe& r : c.tensors) shapes[r.name] = r.shape;
  std::string error;
  if (auto f = eval_expr(schema.flops, case_int_vars(c), shapes, &error)) cost += *f;
  return cost;
}

int64_t smallest_case_cost(const CaseSpace& space) {
  const OpSchema& schema = space.schema();
  std::map<std::string, int64_t> dims;
  for (const auto& [name, domain] : schema.dims) dims[name] = std::max<int64_t>(space.limits_for(name).first, 1);
  AttrMap attrs;
  for (const AttrSpec& a : schema.attributes) {
    auto fixed = space.manifest().attrs.find(a.name);
    if (fixed != space.manifest().attrs.end()) attrs[a.name] = fixed->second;
    else if (!a.dim_of.empty()) attrs[a.name] = int64_t(-1);
    else if (!a.values.empty()) attrs[a.name] = a.values.front();
    else attrs[a.name] = a.default_value;
  }
  const size_t nalt = schema.inputs.empty() ? 1 : std::max<size_t>(schema.inputs[0].shapes.size(), 1);
  int64_t best = -1;
  for (size_t alt = 0; alt < nalt; ++alt)
    for (DType dtype : space.dtypes()) {
      Case c;
      std::string error;
      if (!space.build(dims, alt, attrs, dtype, Distribution::Normal, 1, &c, &error)) continue;
      const int64_t cost = case_cost(schema, c);
      if (best < 0 || cost < best) best = cost;
    }
  return best;
}

std::string CaseBudget::note() const {
  if (!raised()) return "";
  return "fewer cases at the contract's own shapes: its smallest case costs " + std::to_string(floor) +
         " (elements plus flops), above the gate's per-case budget";
}

CaseBudget case_budget(const CaseSpace& space, int64_t gate_cap, int gate_cases, int min_cases) {
  CaseBudget b;
  b.cap = gate_cap;
  b.cases = gate_cases;
  b.floor = smallest_case_cost(space);
  if (b.floor <= gate_cap) return b;
  b.cap = b.floor;
  const double scaled = double(gate_cases) * double(gate_cap) / double(b.floor);
  b.cases = std::clamp(int(scaled), std::min(min_cases, gate_cases), gate_cases);
  return b;
}

}  // namespace gauntlet
