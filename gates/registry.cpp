// The one explicit list of gates, in the SPEC's order: the twelve contract gates, then timing.
#include "gauntlet/gate.h"

namespace gauntlet {

std::unique_ptr<Gate> make_contract_gate();
std::unique_ptr<Gate> make_accuracy_gate();
std::unique_ptr<Gate> make_special_values_gate();
std::unique_ptr<Gate> make_subnormals_gate();
std::unique_ptr<Gate> make_shapes_gate();
std::unique_ptr<Gate> make_layouts_gate();
std::unique_ptr<Gate> make_determinism_gate();
std::unique_ptr<Gate> make_statelessness_gate();
std::unique_ptr<Gate> make_accumulation_gate();
std::unique_ptr<Gate> make_gradients_gate();
std::unique_ptr<Gate> make_memory_gate();
std::unique_ptr<Gate> make_provenance_gate();
std::unique_ptr<Gate> make_timing_gate();

std::vector<std::string> gate_names() {
  return {"contract",      "accuracy",     "special-values", "subnormals", "shapes",     "layouts", "determinism",
          "statelessness", "accumulation", "memory",         "gradients",  "provenance", "timing"};
}

std::unique_ptr<Gate> make_gate(const std::string& name) {
  if (name == "contract") return make_contract_gate();
  if (name == "accuracy") return make_accuracy_gate();
  if (name == "special-values") return make_special_values_gate();
  if (name == "subnormals") return make_subnormals_gate();
  if (name == "shapes") return make_shapes_gate();
  if (name == "layouts") return make_layouts_gate();
  if (name == "determinism") return make_determinism_gate();
  if (name == "statelessness") return make_statelessness_gate();
  if (name == "accumulation") return make_accumulation_gate();
  if (name == "gradients") return make_gradients_gate();
  if (name == "memory") return make_memory_gate();
  if (name == "provenance") return make_provenance_gate();
  if (name == "timing") return make_timing_gate();
  return nullptr;
}

std::vector<std::unique_ptr<Gate>> all_gates() {
  std::vector<std::unique_ptr<Gate>> gates;
  for (const std::string& n : gate_names()) gates.push_back(make_gate(n));
  return gates;
}

}  // namespace gauntlet
