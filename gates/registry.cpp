// The one explicit list of gates, in the SPEC's order: the twelve contract gates, then timing.
#include "gauntlet/cases/gate.h"

#include <cstdlib>

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

namespace {
// Each gate once: its name, its factory, and whether its CUDA children keep concurrent hardware
// queues (CUDA_DEVICE_MAX_CONNECTIONS; kDefaultConcurrentGateQueues unless set). The others get
// one queue, which makes a fresh context 2.6x cheaper on the H200 (docs/gpu.md) and can only take
// concurrency between a kernel's streams away; the two gates that need it keep it: determinism (a
// race between streams must be able to show) and timing (a kernel's own overlap is part of its time).
struct GateEntry {
  const char* name;
  std::unique_ptr<Gate> (*make)();
  bool concurrent_streams;
};
const GateEntry kGates[] = {
    {"contract", make_contract_gate, false},          {"accuracy", make_accuracy_gate, false},
    {"special-values", make_special_values_gate, false}, {"subnormals", make_subnormals_gate, false},
    {"shapes", make_shapes_gate, false},              {"layouts", make_layouts_gate, false},
    {"determinism", make_determinism_gate, true},     {"statelessness", make_statelessness_gate, false},
    {"accumulation", make_accumulation_gate, false},  {"memory", make_memory_gate, false},
    {"gradients", make_gradients_gate, false},        {"provenance", make_provenance_gate, false},
    {"timing", make_timing_gate, true},
};

// The order in which waiting gates get a slot (GateSlots::acquire): the longest first, so a
// kernel's last slots are not left to one long gate while the others idle. Measured: on the H200,
// each gate's own time (its children's starts and round trips, slot waits excluded) in the 4x4
// throughput run of the CUDA controls, statelessness 4.1 s, determinism 3.0, memory 2.8, shapes
// 2.0, layouts 1.7, accumulation and provenance 1.4, the others 1.1-1.3 (docs/gpu.md); on the CPU
// the memory gate is the longest (its ASan child, docs/performance.md). Timing comes first: it
// runs once a kernel's other gates are done, and the kernel is finished with it.
const char* const kStartOrder[] = {"timing",         "memory",       "statelessness", "determinism", "shapes",
                                   "layouts",        "accumulation", "provenance",    "special-values",
                                   "accuracy",       "subnormals",   "contract",      "gradients"};
}  // namespace

int gate_start_rank(const std::string& name) {
  int rank = 0;
  for (const char* n : kStartOrder) {
    if (name == n) return rank;
    ++rank;
  }
  return rank;  // unknown: after the known ones
}

std::vector<std::string> gate_names() {
  std::vector<std::string> names;
  for (const GateEntry& g : kGates) names.push_back(g.name);
  return names;
}

std::unique_ptr<Gate> make_gate(const std::string& name) {
  for (const GateEntry& g : kGates)
    if (name == g.name) return g.make();
  return nullptr;
}

uint32_t gate_hardware_queues(const std::string& name, uint32_t concurrent_queues) {
  for (const GateEntry& g : kGates)
    if (name == g.name) return g.concurrent_streams ? concurrent_queues : 1;
  return 0;  // unknown: the driver's default, which never hides anything
}

bool concurrent_gate_queues_from_env(uint32_t* queues, std::string* error) {
  *queues = kDefaultConcurrentGateQueues;
  const char* v = std::getenv("GAUNTLET_CONCURRENT_GATE_QUEUES");
  if (!v || !*v) return true;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end != '\0' || n < 0 || n > 32) {
    *error = "GAUNTLET_CONCURRENT_GATE_QUEUES='" + std::string(v) +
             "': expected the determinism and timing children's hardware queues, 1 to 32 (0: the driver's default)";
    return false;
  }
  *queues = uint32_t(n);
  return true;
}

uint32_t concurrent_gate_queues() {
  static const uint32_t concurrent = [] {
    uint32_t q = 0;
    std::string ignored;  // the command line refuses a bad value before any gate runs
    return concurrent_gate_queues_from_env(&q, &ignored) ? q : kDefaultConcurrentGateQueues;
  }();
  return concurrent;
}

uint32_t gate_hardware_queues(const std::string& name) { return gate_hardware_queues(name, concurrent_gate_queues()); }

std::vector<std::unique_ptr<Gate>> all_gates() {
  std::vector<std::unique_ptr<Gate>> gates;
  for (const std::string& n : gate_names()) gates.push_back(make_gate(n));
  return gates;
}

}  // namespace gauntlet
