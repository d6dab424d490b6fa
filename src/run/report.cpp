// Rendering a kernel report: the terminal table and the SPEC's per-kernel JSON.
#include <cstdio>

#include "gauntlet/run/root_cause.h"
#include "gauntlet/run/verify.h"

namespace gauntlet {

nlohmann::json gate_to_json(const GateVerdict& v) {
  nlohmann::json g;
  g["name"] = v.name;
  g["status"] = status_name(v.status);
  g["category"] = category_name(v.category);
  g["message"] = v.message;
  g["replay"] = v.replay.empty() ? nlohmann::json(nullptr) : nlohmann::json(v.replay);
  g["scope"] = v.scope.empty() ? nlohmann::json(nullptr) : nlohmann::json(v.scope);
  g["cases"] = v.cases;
  g["seconds"] = v.seconds;
  if (!v.outputs_sha256.empty()) g["outputs_sha256"] = v.outputs_sha256;
  if (!v.evidence.empty()) g["evidence"] = v.evidence;
  return g;
}

std::optional<GateVerdict> gate_from_json(const nlohmann::json& g, std::string* error) {
  // Stored verdicts come back through here (audit resume, merge): a field of the wrong type is
  // refused rather than guessed, so a damaged record is rerun instead of trusted.
  auto bad = [&](const std::string& field, const std::string& why) {
    *error = "gate record: field '" + field + "': " + why;
    return std::nullopt;
  };
  if (!g.is_object()) return bad("(record)", "not an object");
  GateVerdict v;
  if (!g.contains("name") || !g["name"].is_string()) return bad("name", "required string");
  v.name = g["name"].get<std::string>();
  if (!g.contains("status") || !g["status"].is_string()) return bad("status", "required string");
  const std::string status = g["status"].get<std::string>();
  bool known = false;
  for (Status s : {Status::Pass, Status::Fail, Status::Error, Status::Skip, Status::HarnessError})
    if (status == status_name(s)) v.status = s, known = true;
  if (!known) return bad("status", "unknown status '" + status + "'");
  const std::string category = g.value("category", std::string());
  known = false;
  for (Category c : {Category::None, Category::BuildError, Category::LoadError, Category::RuntimeError, Category::Crash,
                     Category::Timeout, Category::OutOfMemory, Category::WrongResult, Category::HarnessError})
    if (category == category_name(c)) v.category = c, known = true;
  if (!known) return bad("category", "unknown category '" + category + "'");
  try {
    v.message = g.value("message", std::string());
    if (g.contains("replay") && g["replay"].is_string()) v.replay = g["replay"].get<std::string>();
    // Records stored before scopes existed have none: such a failure counts as in-contract.
    if (g.contains("scope") && g["scope"].is_string()) v.scope = g["scope"].get<std::string>();
    v.outputs_sha256 = g.value("outputs_sha256", std::string());
    v.cases = g.value("cases", 0);
    v.seconds = g.value("seconds", 0.0);
    if (g.contains("evidence")) v.evidence = g["evidence"];
  } catch (const nlohmann::json::exception& e) {
    return bad("(record)", e.what());
  }
  return v;
}

nlohmann::json report_to_json(const KernelReport& r) {
  nlohmann::json j;
  j["verdict"] = r.verdict;
  j["op"] = r.op;
  j["source"] = r.source;
  j["kernel_hash"] = r.kernel_hash;
  j["schema_hash"] = r.schema_hash;
  j["seed"] = r.seed;
  j["seconds"] = r.seconds;
  nlohmann::json gates = nlohmann::json::array();
  for (const GateVerdict& v : r.gates) gates.push_back(gate_to_json(v));
  j["gates"] = gates;
  j["build"] = {{"ok", r.build.ok},       {"cache_hit", r.build.cache_hit}, {"seconds", r.build.seconds},
                {"prelude", r.build.prelude}, {"error", r.build.error},     {"log_head", r.build.log_head}};
  if (!r.build.module_dir.empty()) j["build"]["module_dir"] = r.build.module_dir;  // a Python module's build
  j["environment"] = r.environment;
  if (!r.root_cause.is_null()) j["root_cause"] = r.root_cause;
  return j;
}

void print_report(const KernelReport& r, std::FILE* out) {
  std::fprintf(out, "gauntlet · %s · %s (sha256 %.12s) · seed %llu\n", r.op.c_str(), r.source.c_str(),
               r.kernel_hash.c_str(), (unsigned long long)r.seed);
  if (!r.build.ok) {
    std::fprintf(out, "  build-error: %s\n", r.build.error.c_str());
    // The compiler's first error lines, less the one the error line above already quotes.
    size_t start = 0;
    while (start < r.build.log_head.size()) {
      size_t end = r.build.log_head.find('\n', start);
      if (end == std::string::npos) end = r.build.log_head.size();
      const std::string line = r.build.log_head.substr(start, end - start);
      if (!line.empty() && r.build.error.find(line) == std::string::npos) std::fprintf(out, "    %s\n", line.c_str());
      start = end + 1;
    }
  }
  // A failing kernel leads with its one root cause (root_cause.h), before the gates it fans out to.
  // (A kernel that did not build leads with its build error above, which is that cause.)
  if (!r.root_cause.is_null() && r.build.ok) std::fprintf(out, "  cause: %s\n", root_cause_line(r.root_cause).c_str());
  std::fprintf(out, "  %-15s %-13s %-13s %7s  %s\n", "gate", "status", "category", "time", "message");
  int failed = 0, errors = 0, outside = 0;
  for (const GateVerdict& v : r.gates) {
    std::string status = status_name(v.status);
    if (is_failing(v.status))
      for (char& c : status) c = char(toupper(c));
    const bool out_of_contract = is_failing(v.status) && v.status != Status::HarnessError && v.scope == "out-of-contract";
    if (out_of_contract) status += "(out)";
    outside += out_of_contract;
    failed += v.status == Status::Fail && !out_of_contract;
    errors += (v.status == Status::Error || v.status == Status::HarnessError) && !out_of_contract;
    std::string msg = v.message.size() > 160 ? v.message.substr(0, 157) + "..." : v.message;
    std::fprintf(out, "  %-15s %-13s %-13s %6.2fs  %s\n", v.name.c_str(), status.c_str(),
                 category_name(v.category), v.seconds, msg.c_str());
    if (v.evidence.contains("diagnosis") && v.evidence["diagnosis"].is_object())
      std::fprintf(out, "  %-15s diagnosis: %s: %s\n", "", v.evidence["diagnosis"].value("name", "").c_str(),
                   v.evidence["diagnosis"].value("text", "").c_str());
    if (!v.replay.empty()) std::fprintf(out, "  %-15s replay: gauntlet replay %s\n", "", v.replay.c_str());
  }
  std::string verdict = r.verdict;
  for (char& c : verdict) c = char(toupper(c));
  std::string unsafe;
  if (outside > 0) unsafe = ", " + std::to_string(outside) + " failing only outside the kernel's contract";
  std::fprintf(out, "verdict: %s (%d failed, %d errors%s, of %zu gates) in %.2fs\n", verdict.c_str(), failed, errors,
               unsafe.c_str(), r.gates.size(), r.seconds);
}

}  // namespace gauntlet
