// Binding a mapped KernelBench module's contract to its get_inputs() shapes (problem_contract.h).
#include "gauntlet/kernelbench/problem_contract.h"

#include <algorithm>
#include <chrono>

#include "gauntlet/cases/case.h"
#include "gauntlet/cases/case_cost.h"
#include "gauntlet/oracle/module_oracle.h"

namespace gauntlet {
namespace {

std::string shape_text(const std::vector<int64_t>& s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

const InputSpec* find_input(const OpSchema& s, const std::string& name) {
  for (const InputSpec& in : s.inputs)
    if (in.name == name) return &in;
  return nullptr;
}

// Binds the plain dim names of one shape pattern to a tensor's sizes; false on a size that
// contradicts an earlier binding (the pattern does not describe this tensor).
bool bind_pattern(const OpSchema& s, const std::vector<std::string>& pattern, const std::vector<int64_t>& shape,
                  std::map<std::string, int64_t>* dims) {
  if (pattern.size() != shape.size()) return false;
  std::map<std::string, int64_t> out = *dims;
  for (size_t k = 0; k < pattern.size(); ++k) {
    if (!s.dims.count(pattern[k])) continue;  // a literal or an expression: checked by the built case
    auto [it, fresh] = out.emplace(pattern[k], shape[k]);
    if (!fresh && it->second != shape[k]) return false;
  }
  *dims = out;
  return true;
}

}  // namespace

ProblemBinding bind_problem_shapes(const OpSchema& schema, const KernelManifest& manifest, const ModuleDescription& d) {
  const std::vector<std::string>& problem_inputs = manifest.problem_inputs;
  ProblemBinding b;
  auto no = [&](const std::string& why) {
    b.bound = false;
    b.why_not = why;
    b.dims.clear();
    b.ranks.clear();
    return b;
  };
  if (d.inputs.size() != problem_inputs.size())
    return no("get_inputs() returns " + std::to_string(d.inputs.size()) + " tensors; the problem map names " +
              std::to_string(problem_inputs.size()));
  std::optional<DType> floating;
  for (size_t i = 0; i < d.inputs.size(); ++i) {
    const InputSpec* in = find_input(schema, problem_inputs[i]);
    if (!in) return no("the problem map names input '" + problem_inputs[i] + "', which schema " + schema.name + " lacks");
    bool matched = false;
    for (const auto& pattern : in->shapes)
      if (bind_pattern(schema, pattern, d.inputs[i].shape, &b.dims)) {
        matched = true;
        break;
      }
    if (!matched)
      return no("get_inputs()[" + std::to_string(i) + "] " + shape_text(d.inputs[i].shape) + " fits no shape of " +
                schema.name + "'s input " + in->name + " beside the others");
    b.ranks[in->name] = int64_t(d.inputs[i].shape.size());
    if (dtype_is_floating(d.inputs[i].dtype) && !floating) floating = d.inputs[i].dtype;
    b.text += (i ? ", " : "") + in->name + " " + shape_text(d.inputs[i].shape) + " " + dtype_name(d.inputs[i].dtype);
  }
  // A size past the schema's dim domain is still the problem's (the domain bounds what gauntlet
  // draws, not what a problem may ask): it binds, and the exact limit wins over the domain
  // (CaseSpace::limits_for). Below the domain's floor the schema has no such op.
  for (const auto& [dim, v] : b.dims) {
    const DimDomain& dom = schema.dims.at(dim);
    if (v < std::max<int64_t>(dom.min, dom.zero_allowed ? 0 : 1))
      return no("get_inputs() makes " + dim + " = " + std::to_string(v) + ", below schema " + schema.name +
                "'s smallest " + std::to_string(dom.min));
  }
  const std::vector<DType> domain = schema.case_dtypes();
  if (floating && std::find(domain.begin(), domain.end(), *floating) == domain.end())
    return no(std::string("get_inputs() builds ") + dtype_name(*floating) + ", outside schema " + schema.name + "'s dtypes");
  b.dtype = floating.value_or(domain.empty() ? DType::Float32 : domain.front());
  // The case the bound contract builds must be get_inputs()' own: a dim the schema derives by an
  // expression, or an input's other alternative, could make it differ.
  b.bound = true;
  KernelManifest bound = manifest;
  apply_problem_binding(b, &bound);
  CaseSpace space(schema, bound);
  std::map<std::string, int64_t> dims;
  for (const auto& [dim, dom] : schema.dims) dims[dim] = b.dims.count(dim) ? b.dims.at(dim) : space.limits_for(dim).first;
  AttrMap attrs;
  for (const AttrSpec& a : schema.attributes) {
    auto fixed = manifest.attrs.find(a.name);
    attrs[a.name] = fixed != manifest.attrs.end() ? fixed->second : a.default_value;
  }
  const size_t nalt = schema.inputs.empty() ? 1 : schema.inputs[0].shapes.size();
  std::string last = "no shape alternative builds it";
  for (size_t alt = 0; alt < nalt; ++alt) {
    Case c;
    std::string why;
    if (!space.build(dims, alt, attrs, b.dtype, Distribution::Normal, 1, &c, &why)) {
      last = why;
      continue;
    }
    bool same = true;
    for (size_t i = 0; i < problem_inputs.size() && same; ++i)
      for (const TensorRecipe& r : c.tensors)
        if (r.name == problem_inputs[i] && r.shape != d.inputs[i].shape) {
          same = false;
          last = "the bound dims build " + r.name + " " + shape_text(r.shape) + ", get_inputs() " +
                 shape_text(d.inputs[i].shape);
        }
    if (!same) continue;
    // The problem's own case must fit what the gates' oracle takes: past the schema's max_numel
    // (newer KernelBench problems build billions of elements) the case is not run at all, and the
    // contract keeps the problem's ranks and relations, as before binding.
    for (const auto& [name, n] : case_tensor_numels(schema, c))
      if (schema.max_numel > 0 && n > schema.max_numel)
        return no("get_inputs()' case has " + std::to_string(n) + " elements in " + name + ", over schema " +
                  schema.name + "'s max_numel " + std::to_string(schema.max_numel));
    return b;
  }
  return no("get_inputs()' case cannot be built from schema " + schema.name + ": " + last);
}

std::map<std::string, std::string> problem_structures(const OpSchema& schema, const KernelManifest& manifest,
                                                      const ModuleDescription& d) {
  std::map<std::string, std::string> out;
  if (d.inputs.size() != manifest.problem_inputs.size()) return out;
  for (size_t i = 0; i < d.inputs.size(); ++i)
    if (!d.inputs[i].structure.empty() && schema.input(manifest.problem_inputs[i]))
      out[manifest.problem_inputs[i]] = d.inputs[i].structure;
  return out;
}

void apply_problem_binding(const ProblemBinding& b, KernelManifest* m) {
  for (const auto& [input, structure] : b.structures) m->structures[input] = structure;
  if (!b.bound) return;
  for (const auto& [dim, v] : b.dims) {
    DimLimit& lim = m->shapes[dim];
    // A narrower declaration that excludes get_inputs()' own size is the map's mistake, not the
    // kernel's: the problem's size wins.
    if ((lim.min && *lim.min > v) || (lim.max && *lim.max < v)) lim = DimLimit{};
    lim.min = v;
    lim.max = v;
  }
  for (const auto& [input, rank] : b.ranks) m->ranks[input] = {rank};
  m->dtypes = {b.dtype};
}

ProblemBinding bind_problem_contract(const OpSchema& schema, KernelManifest* m, const SandboxOptions& sandbox) {
  if (m->problem_inputs.empty())
    for (const InputSpec& in : schema.inputs) m->problem_inputs.push_back(in.name);
  std::string why;
  const auto started = std::chrono::steady_clock::now();
  const auto desc = ModuleReference::describe(*m, sandbox, &why);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ProblemBinding b = desc ? bind_problem_shapes(schema, *m, *desc) : ProblemBinding{};
  b.describe_seconds = seconds;
  b.described = desc.has_value();
  if (!desc) b.why_not = "its get_inputs() could not be described: " + why;
  if (desc) b.structures = problem_structures(schema, *m, *desc);
  apply_problem_binding(b, m);
  return b;
}

nlohmann::json problem_binding_json(const ProblemBinding& b) {
  nlohmann::json j = {{"source", "the problem's get_inputs()"}, {"bound", b.bound},
                      {"described", b.described}, {"describe_seconds", b.describe_seconds}};
  if (b.bound) {
    j["dims"] = b.dims;
    j["inputs"] = b.text;
    j["dtype"] = dtype_name(b.dtype);
  } else {
    j["why_not"] = b.why_not;
  }
  if (!b.structures.empty()) j["structure"] = b.structures;
  return j;
}

}  // namespace gauntlet
