// The statelessness gate's batch property: finding the leading dim that every input and output shares row by row.
#include "statelessness_batch.h"

#include <algorithm>

#include "gauntlet/cases/case_cost.h"

namespace gauntlet::statelessness_gate {
namespace {

bool refers_to(const std::string& expr, const std::string& sym) {
  std::string error;
  auto names = expr_names(expr, &error);
  return names && std::find(names->begin(), names->end(), sym) != names->end();
}

}  // namespace

std::vector<std::vector<std::string>> chosen_patterns(const OpSchema& schema, const Case& c, size_t alt) {
  std::vector<std::vector<std::string>> out(schema.inputs.size());
  const auto vars = case_int_vars(c);
  for (size_t k = 0; k < schema.inputs.size() && k < c.tensors.size(); ++k) {
    const auto& alts = schema.inputs[k].shapes;
    for (size_t j = 0; j < alts.size(); ++j) {
      const auto& pattern = alts[(k == 0 ? alt : alt + j) % alts.size()];
      std::vector<int64_t> shape;
      for (const std::string& e : pattern) {
        std::string error;
        auto v = eval_expr(e, vars, &error);
        shape.push_back(v ? *v : -1);
      }
      if (shape == c.tensors[k].shape) {
        out[k] = pattern;
        break;
      }
      if (k == 0) break;
    }
  }
  return out;
}

std::vector<bool> batch_inputs(const OpSchema& schema, const Case& c, size_t alt, std::string* why) {
  const auto patterns = chosen_patterns(schema, c, alt);
  if (patterns.empty() || patterns[0].empty()) return (*why = "the first input has no leading dim", std::vector<bool>{});
  const std::string sym = patterns[0][0];
  if (!schema.dims.count(sym)) return (*why = "the first input's leading dim is an expression", std::vector<bool>{});
  if (std::count(schema.coupled_dims.begin(), schema.coupled_dims.end(), sym))
    return (*why = "the op couples the elements along " + sym + " (coupled_dims): a slice is not a slice of the result",
            std::vector<bool>{});
  const int64_t L = c.tensors[0].shape[0];
  std::vector<bool> slice(c.tensors.size(), false);
  for (size_t k = 0; k < patterns.size(); ++k) {
    if (patterns[k].empty() && k < c.tensors.size() && !c.tensors[k].shape.empty())
      return (*why = "input " + schema.inputs[k].name + " has no recognised shape pattern", std::vector<bool>{});
    for (size_t p = 0; p < patterns[k].size(); ++p) {
      if (p == 0 && patterns[k][p] == sym) {
        slice[k] = c.tensors[k].shape[0] == L;
        continue;
      }
      if (refers_to(patterns[k][p], sym))
        return (*why = sym + " also appears inside " + schema.inputs[k].name + "'s shape", std::vector<bool>{});
    }
  }
  auto input_index = [&](const std::string& n) -> int {
    for (size_t k = 0; k < schema.inputs.size(); ++k)
      if (schema.inputs[k].name == n) return int(k);
    return -1;
  };
  auto wrapped_dim_attr = [&](const std::string& attr, const std::string& of) -> int64_t {
    auto it = c.attrs.find(attr);
    const int k = input_index(of);
    if (it == c.attrs.end() || k < 0 || !std::holds_alternative<int64_t>(it->second)) return -1;
    const int64_t rank = int64_t(c.tensors[size_t(k)].shape.size());
    return rank == 0 ? -1 : (std::get<int64_t>(it->second) % rank + rank) % rank;
  };
  if (schema.reduction) {
    if (!schema.reduction->dim_attr.empty()) {
      const AttrSpec* a = schema.attribute(schema.reduction->dim_attr);
      const std::string of = a && !a->dim_of.empty() ? a->dim_of : schema.inputs[0].name;
      if (wrapped_dim_attr(schema.reduction->dim_attr, of) == 0)
        return (*why = "the op reduces over the leading dim", std::vector<bool>{});
    }
    if (refers_to(schema.reduction->K, sym)) return (*why = "the op reduces over " + sym, std::vector<bool>{});
  }
  for (const OutputSpec& o : schema.outputs) {
    const std::string& rule = o.shape_rule;
    if (rule.rfind("same:", 0) == 0 || rule.rfind("reduce:", 0) == 0) {
      std::string in = rule.substr(rule.find(':') + 1);
      in = in.substr(0, in.find(':'));
      const int k = input_index(in);
      if (k < 0 || !slice[size_t(k)]) return (*why = "output " + o.name + " does not follow " + sym, std::vector<bool>{});
    } else if (rule.rfind("broadcast:", 0) == 0) {
      // The output's leading dim is the first input's when no operand of its rank keeps a
      // non-unit leading dim of its own.
      if (!slice[0]) return (*why = "the first input is not sliced", std::vector<bool>{});
      for (size_t k = 1; k < c.tensors.size(); ++k)
        if (c.tensors[k].shape.size() > c.tensors[0].shape.size() ||
            (c.tensors[k].shape.size() == c.tensors[0].shape.size() && !slice[k] && c.tensors[k].shape[0] != 1))
          return (*why = "the broadcast's leading dim is not the first input's", std::vector<bool>{});
    } else if (rule.empty() && !o.dims.empty()) {
      if (o.dims[0] != sym) return (*why = "output " + o.name + " does not lead with " + sym, std::vector<bool>{});
      for (size_t p = 1; p < o.dims.size(); ++p)
        if (refers_to(o.dims[p], sym)) return (*why = sym + " appears inside output " + o.name, std::vector<bool>{});
    } else {
      return (*why = "output " + o.name + " (" + (rule.empty() ? "explicit" : rule) + ") has no batch dim", std::vector<bool>{});
    }
  }
  return slice;
}

}  // namespace gauntlet::statelessness_gate
