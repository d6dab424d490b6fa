// The kernel report's environment: where the kernel ran and how its CUDA children used the GPU.
#include "kernel_environment.h"

#include <cstdlib>

#include <sys/utsname.h>
#include <unistd.h>

#include <torch/version.h>

#include "gauntlet/version.h"

namespace gauntlet {

nlohmann::json environment_json(const Launcher& launcher, const std::string& sandbox_note, const std::string& device) {
  utsname u{};
  uname(&u);
  nlohmann::json env;
  env["gauntlet"] = GAUNTLET_VERSION_STRING;
  env["torch"] = TORCH_VERSION;
  env["compiler"] = std::string("g++ ") + __VERSION__;
  env["host"] = std::string(u.sysname) + " " + u.release + " " + u.machine;
  env["cpus"] = sysconf(_SC_NPROCESSORS_ONLN);
  env["device"] = device;
  // The parent's OpenMP idle threads: PASSIVE unless the caller chose (src/main/passive_openmp.cpp).
  const char* wait_policy = std::getenv("OMP_WAIT_POLICY");
  env["openmp_wait_policy"] = wait_policy && *wait_policy ? wait_policy : "default";
  if (device == "cuda") {
    // The GPU as the worker child saw it (the parent never initializes CUDA); absent when no
    // child loaded the kernel (a build error).
    const nlohmann::json gpu = nlohmann::json::parse(launcher.device_info(), nullptr, false);
    if (gpu.is_object()) env["gpu"] = gpu;
    env["gpu_index"] = launcher.options().gpu_index;
  }
  // What the children actually came from (the zygote may have been unavailable).
  env["sandbox"] = {{"launcher", sandbox_note.rfind("zygote", 0) == 0 ? "zygote" : "fork+exec"},
                    {"isolation", sandbox_note},
                    {"timeout_seconds", launcher.options().timeout_seconds},
                    {"memory_limit_bytes", launcher.options().memory_limit_bytes}};
  return env;
}

void add_gpu_usage(nlohmann::json* environment, const GpuCounters& before, const Launcher& launcher) {
  // This kernel's children's turns on the GPU (an audit lane or verify runs one kernel at a time).
  const GpuTurn::Totals t = GpuTurn::process_totals();
  const GpuTurn::Totals& b = before.turns;
  nlohmann::json& turns = (*environment)["gpu_turns"];
  turns = {{"turns", t.turns - b.turns},
           {"waited_seconds", t.waited_seconds - b.waited_seconds},
           {"held_seconds", t.held_seconds - b.held_seconds},
           {"overruns", t.overruns - b.overruns},
           {"beside_others", t.beside_others - b.beside_others},
           {"bound_seconds", launcher.options().gpu_turn_bound_seconds},
           {"slots_while_overrun", launcher.options().gpu_turn_slots_while_overrun},
           {"start_slots", launcher.options().gpu_start_slots},
           {"gate_slots", launcher.options().gpu_gate_slots}};
  nlohmann::json by_length = nlohmann::json::array();
  for (int i = 0; i < GpuTurn::kHeldSlots; ++i) {
    const long n = t.turns_by_length[i] - b.turns_by_length[i];
    if (n == 0) continue;
    by_length.push_back({{"up_to_ms", i < GpuTurn::kHeldSlots - 1 ? nlohmann::json(GpuTurn::kHeldEdges[i] * 1000) : nlohmann::json()},
                         {"turns", n},
                         {"held_seconds", t.held_by_length[i] - b.held_by_length[i]}});
  }
  turns["by_length"] = by_length;
  // Inside the CUDA children's cases (native worker), where the host time went.
  const WorkerPhaseTotals p = worker_phase_totals();
  const WorkerPhaseTotals& pb = before.phases;
  if (p.cases > pb.cases)
    (*environment)["worker_phases"] = {{"cases", p.cases - pb.cases},
                                       {"poison_seconds", p.poison_seconds - pb.poison_seconds},
                                       {"to_device_seconds", p.to_device_seconds - pb.to_device_seconds},
                                       {"kernel_seconds", p.kernel_seconds - pb.kernel_seconds},
                                       {"from_device_seconds", p.from_device_seconds - pb.from_device_seconds},
                                       {"check_seconds", p.check_seconds - pb.check_seconds},
                                       {"case_seconds", p.case_seconds - pb.case_seconds},
                                       {"reserve_seconds", p.reserve_seconds - pb.reserve_seconds},
                                       {"poison_release_seconds", p.poison_release_seconds - pb.poison_release_seconds}};
  if (p.counted_cases > pb.counted_cases)
    (*environment)["worker_phases"]["driver_memory"] = {{"cases", p.counted_cases - pb.counted_cases},
                                                        {"allocs", p.driver_allocs - pb.driver_allocs},
                                                        {"frees", p.driver_frees - pb.driver_frees}};
  // Where a CUDA child's load went between the two processes (child_start_clock.h): sums.
  const ChildStartTotals c = child_start_totals();
  const ChildStartTotals& cb = before.starts;
  if (c.children > cb.children)
    (*environment)["child_starts"] = {{"children", c.children - cb.children},
                                      {"load_in_flight_seconds", c.load_in_flight_seconds - cb.load_in_flight_seconds},
                                      {"reply_in_flight_seconds", c.reply_in_flight_seconds - cb.reply_in_flight_seconds},
                                      {"load_total_seconds", c.load_total_seconds - cb.load_total_seconds}};
}

}  // namespace gauntlet
