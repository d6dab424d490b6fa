// The shapes gate's held-out size candidates and the per-case budget its cases must fit.
#include "shapes_budget.h"

#include <algorithm>
#include <set>

namespace gauntlet::shapes_gate {

Budget sweep_budget(int budget) { return {(int64_t(1) << 17) * budget, (int64_t(1) << 21) * budget}; }
Budget combo_budget(int budget) { return {(int64_t(1) << 13) * budget, (int64_t(1) << 18) * budget}; }

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

namespace {

int64_t numel_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n = std::min<int64_t>(n * std::max<int64_t>(s, 0), int64_t(1) << 50);
  return n;
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

Budget raised_to(const OpSchema& schema, const Case& c, Budget b) {
  for (const TensorRecipe& r : c.tensors) b.elements = std::max(b.elements, numel_of(r.shape));
  for (int64_t n : output_numels(schema, c)) b.elements = std::max(b.elements, n);
  if (!schema.flops.empty()) {
    std::string error;
    if (auto f = eval_expr(schema.flops, expr_vars(c), shape_map(c), &error)) b.flops = std::max(b.flops, *f);
  }
  return b;
}

}  // namespace gauntlet::shapes_gate
