// The field's standard check of one kernel: KernelBench's eval for a Python module, kbcheck for a manifest.
#include "gauntlet/run/standard_check.h"

#include <limits.h>
#include <stdlib.h>

#include <chrono>
#include <exception>

#include "gauntlet/cases/gate.h"
#include "gauntlet/common/wire.h"
#include "gauntlet/run/verify.h"

namespace gauntlet {
namespace {

constexpr const char* kKernelBench = "kernelbench";
constexpr const char* kKbCheck = "kbcheck";

StandardCheck said(const char* verdict, const std::string& reason, const char* check) {
  StandardCheck c;
  c.verdict = verdict;
  c.reason = reason;
  c.check = check;
  return c;
}

// The launcher in Python mode for the check's children, as it was afterwards (verify's scope).
// Left untouched when already on: an audit lane sets it for the kernel before running the check
// beside verify's gates, so no write of this one crosses theirs.
struct PythonChildren {
  Launcher& launcher;
  const bool was;
  explicit PythonChildren(Launcher& l) : launcher(l), was(l.python_module()) {
    if (!was) l.set_python_module(true);
  }
  ~PythonChildren() {
    if (!was) launcher.set_python_module(false);
  }
};

// A child that failed while loading the module or running the trials, as KernelBench would count
// it: a crash, a hang or an exception is the kernel's failure (its eval process would have died or
// been killed, and the kernel counted incorrect); gauntlet's own failure, or the worker's memory
// limit at the problem's own sizes, means the check did not run.
StandardCheck from_failed_child(const std::string& when, const Outcome& o) {
  const std::string why = when + ": " + o.message;
  switch (o.kind) {
    case Outcome::Kind::HarnessError:
      return said("error", why, kKernelBench);
    case Outcome::Kind::OutOfMemory:
      return said("error", why + " (the problem's get_inputs(), Model and ModelNew need more than --memory-limit)",
                  kKernelBench);
    default:
      return said("reject", why, kKernelBench);
  }
}

StandardCheck kernelbench_check(const KernelManifest& given, Launcher& launcher) {
  PythonChildren python(launcher);
  KernelManifest m = given;
  // The module's extensions, built once (in an audit, by the build-ahead step: a cache hit here).
  const BuildResult build = python_module_build(&m, launcher);
  if (!build.ok)
    return said(build.harness_fault ? "error" : "reject", "the module's build: " + build.error, kKernelBench);
  char resolved[PATH_MAX];
  if (!realpath(m.source.c_str(), resolved)) return said("error", "cannot resolve the module path " + m.source, kKernelBench);
  std::string spawn_error;
  std::unique_ptr<WorkerSession> session = launcher.spawn(&spawn_error);
  if (!session) return said("error", "cannot start a sandboxed worker: " + spawn_error, kKernelBench);
  wire::LoadRequest req;
  req.so_path = resolved;
  const std::string entry = m.entry.empty() || m.entry == "forward" ? "ModelNew" : m.entry;
  // get_inputs() is the child's own to call: none of the gates' constants are passed.
  m.module_constants.clear();
  req.entry = python_load_entry(m, "kbcheck:" + entry);
  req.build_dir = m.module_build_dir;
  req.device = m.device;
  req.poison_byte = 0;  // KernelBench runs without a poisoned heap
  if (req.device == "cuda") req.hardware_queues = concurrent_gate_queues();
  const auto counted = [&req](StandardCheck c) {  // the check's child started, whatever it said
    c.children = 1;
    c.hardware_queues = req.hardware_queues;
    return c;
  };
  Outcome o = session->load(req);
  if (o.kind != Outcome::Kind::Ok) return counted(from_failed_child("loading the module", o));
  // The trials are one request: --timeout bounds them as it bounds a gate's case, and on a GPU
  // the request takes the GPU's turn (gpu_turn.h) as a timing request does.
  std::string reply;
  o = session->exchange(wire::FrameType::Check, "", wire::FrameType::CheckReply, &reply);
  if (o.kind != Outcome::Kind::Ok) return counted(from_failed_child("KernelBench's trials", o));
  session->finish();
  auto parsed = standard_check_from_json(nlohmann::json::parse(reply, nullptr, false));
  if (!parsed) return counted(said("error", "harness: the standard check's child answered no verdict", kKernelBench));
  parsed->check = kKernelBench;
  return counted(*parsed);
}

StandardCheck manifest_check(const KernelManifest& m, Launcher& launcher) {
  std::string error;
  auto r = kb_style_check(m, launcher, &error);
  if (!r) return said("error", error, kKbCheck);
  StandardCheck c = said(r->accepted ? "accept" : "reject", r->reason, kKbCheck);
  c.children = r->children;
  c.hardware_queues = r->hardware_queues;
  return c;
}

}  // namespace

StandardCheck run_standard_check(const KernelManifest& manifest, Launcher& launcher) {
  const auto t0 = std::chrono::steady_clock::now();
  const bool module = is_python_module(manifest);
  StandardCheck c;
  try {
    c = module ? kernelbench_check(manifest, launcher) : manifest_check(manifest, launcher);
  } catch (const std::exception& e) {
    c = said("error", std::string("harness: ") + e.what(), module ? kKernelBench : kKbCheck);
  }
  c.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return c;
}

nlohmann::json standard_check_to_json(const StandardCheck& c) {
  nlohmann::json j = {{"verdict", c.verdict}, {"reason", c.reason}, {"check", c.check}, {"seconds", c.seconds}};
  if (c.children > 0) j["children"] = c.children, j["hardware_queues"] = c.hardware_queues;
  return j;
}

std::optional<StandardCheck> standard_check_from_json(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("verdict") || !j["verdict"].is_string()) return std::nullopt;
  StandardCheck c;
  c.verdict = j["verdict"].get<std::string>();
  if (c.verdict != "accept" && c.verdict != "reject" && c.verdict != "error") return std::nullopt;
  if (j.contains("reason") && j["reason"].is_string()) c.reason = j["reason"].get<std::string>();
  if (j.contains("check") && j["check"].is_string()) c.check = j["check"].get<std::string>();
  if (j.contains("seconds") && j["seconds"].is_number()) c.seconds = j["seconds"].get<double>();
  const auto count = [&j](const char* key) {  // a count stored by standard_check_to_json; 0 otherwise
    return j.contains(key) && j[key].is_number_integer() && j[key].get<int64_t>() >= 0 && j[key].get<int64_t>() <= 1024
               ? int(j[key].get<int64_t>())
               : 0;
  };
  c.children = count("children");
  c.hardware_queues = uint32_t(count("hardware_queues"));
  return c;
}

}  // namespace gauntlet
