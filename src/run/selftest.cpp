// The self-test: each corpus kernel's verdicts against its declared expectations, as a table.
#include "gauntlet/common/atomic_file.h"
#include "gauntlet/sandbox/device_nodes.h"
#include "gauntlet/run/selftest.h"

#include <dirent.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

namespace gauntlet {
namespace {

void walk(const std::string& dir, std::vector<std::string>* out) {
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    std::string path = dir + "/" + name;
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) walk(path, out);
    else if (name.size() > 5 && name.substr(name.size() - 5) == ".json") out->push_back(path);
  }
  closedir(d);
}

std::string gate_letter(const GateVerdict& v) {
  switch (v.status) {
    case Status::Pass: return ".";
    case Status::Fail: return "F";
    case Status::Error: return "E";
    case Status::Skip: return "-";
    case Status::HarnessError: return "H";
  }
  return "?";
}

}  // namespace

std::string default_corpus_dir() {
  if (const char* env = getenv("GAUNTLET_CORPUS")) return env;
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n > 0) {
    std::string exe(buf, size_t(n));
    std::string candidate = exe.substr(0, exe.rfind('/')) + "/../corpus";
    if (access(candidate.c_str(), R_OK) == 0) return candidate;
  }
  return std::string(GAUNTLET_SOURCE_DIR) + "/corpus";
}

std::vector<std::string> find_manifests(const std::string& dir) {
  std::vector<std::string> out;
  walk(dir, &out);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> check_expectations(const nlohmann::json& expect, const KernelReport& report) {
  std::vector<std::string> bad;
  const std::string want = expect.value("verdict", "pass");
  if (report.verdict != want) bad.push_back("verdict " + report.verdict + ", expected " + want);
  const nlohmann::json gates = expect.value("gates", nlohmann::json::object());
  for (const GateVerdict& v : report.gates) {
    // "*" speaks of the gates that run the kernel: one that skipped (not applicable to this kernel,
    // e.g. gradients without a backward entry) falls under the unlisted rule.
    nlohmann::json rule;
    if (gates.contains(v.name)) rule = gates[v.name];
    else if (gates.contains("*") && v.status != Status::Skip) rule = gates["*"];
    if (rule.is_null()) {
      // Unlisted gates must hold: pass, or skip with a reason.
      if (v.status != Status::Pass && v.status != Status::Skip)
        bad.push_back(v.name + " " + status_name(v.status) + " (" + v.message.substr(0, 120) + "), expected pass");
      continue;
    }
    // "status" may list several outcomes where the bug's effect on that gate is up to the
    // allocator (an unwritten output that a reused buffer happens to fill with the right values);
    // "category" then speaks of the failing ones.
    std::vector<std::string> allowed;
    if (rule.contains("status") && rule["status"].is_array())
      for (const auto& st : rule["status"]) allowed.push_back(st.is_string() ? st.get<std::string>() : "");
    else
      allowed.push_back(rule.value("status", "fail"));
    const bool allowed_status = std::find(allowed.begin(), allowed.end(), status_name(v.status)) != allowed.end();
    std::string ws;
    for (const std::string& a : allowed) ws += (ws.empty() ? "" : " or ") + a;
    if (!allowed_status)
      bad.push_back(v.name + " " + status_name(v.status) + ", expected " + ws + " (" + v.message.substr(0, 120) + ")");
    else if (is_failing(v.status) && rule.contains("category") && rule["category"] != category_name(v.category))
      bad.push_back(v.name + " category " + category_name(v.category) + ", expected " + rule["category"].get<std::string>());
    else if (is_failing(v.status) && rule.contains("diagnosis") &&
             v.evidence.value("diagnosis", nlohmann::json::object()).value("name", "") != rule["diagnosis"])
      bad.push_back(v.name + " diagnosis '" + v.evidence.value("diagnosis", nlohmann::json::object()).value("name", "") +
                    "', expected " + rule["diagnosis"].get<std::string>());
    else if (is_failing(v.status) && rule.contains("scope") && rule["scope"] != v.scope)
      bad.push_back(v.name + " scope " + (v.scope.empty() ? std::string("(none)") : v.scope) + ", expected " +
                    rule["scope"].get<std::string>());
  }
  return bad;
}

int run_selftest(const SelftestOptions& options, Launcher& launcher, std::FILE* out) {
  const std::string dir = options.corpus_dir.empty() ? default_corpus_dir() : options.corpus_dir;
  std::vector<std::string> manifests = find_manifests(dir);
  if (!options.filter.empty())
    manifests.erase(std::remove_if(manifests.begin(), manifests.end(),
                                   [&](const std::string& m) { return m.find(options.filter) == std::string::npos; }),
                    manifests.end());
  if (manifests.empty()) {
    std::fprintf(stderr, "gauntlet: error: no kernel manifests under %s\n", dir.c_str());
    return 2;
  }
  std::fprintf(out, "gauntlet selftest: %zu kernels from %s, seed %llu\n", manifests.size(), dir.c_str(),
               (unsigned long long)options.seed);
  std::fprintf(out, "  %-48s %-14s %-8s %-8s %-13s %-8s %s\n", "kernel", "op", "expect", "verdict", "gates", "kbcheck", "result");
  nlohmann::json all = nlohmann::json::array();
  int mismatched = 0, harness = 0, skipped = 0;
  for (size_t k = 0; k < manifests.size(); ++k) {
    const std::string& path = manifests[k];
    std::string rel = path.rfind(dir + "/", 0) == 0 ? path.substr(dir.size() + 1) : path;
    std::string error;
    auto manifest = load_manifest(path, &error);
    SelftestRow row;
    row.manifest = rel;
    if (!manifest) {
      std::fprintf(out, "  %-48s %s\n", rel.c_str(), ("MANIFEST ERROR: " + error).c_str());
      ++mismatched;
      continue;
    }
    // Reported, not a mismatch: CPU-only hosts (or an older LibTorch) run the rest.
    if (std::string why = why_not_runnable_here(*manifest); !why.empty()) {
      std::fprintf(out, "  %-48s %-14s skipped: %s\n", rel.c_str(), manifest->op.c_str(), why.c_str());
      ++skipped;
      continue;
    }
    VerifyOptions vo = options.verify;
    vo.seed = options.seed;
    vo.progress = false;
    auto report = verify_kernel(*manifest, vo, launcher, &error);
    if (!report) {
      std::fprintf(out, "  %-48s HARNESS ERROR: %s\n", rel.c_str(), error.c_str());
      ++harness;
      continue;
    }
    row.expected = manifest->expect.value("verdict", "pass");
    row.mismatches = check_expectations(manifest->expect, *report);
    row.kbcheck_expected = manifest->expect.value("kbcheck", "");
    if (options.kbcheck && !row.kbcheck_expected.empty()) {
      auto kb = kb_style_check(*manifest, launcher, &error);
      row.kbcheck_got = !kb ? "error" : kb->accepted ? "accept" : "reject";
      if (row.kbcheck_got != row.kbcheck_expected)
        row.mismatches.push_back("kbcheck " + row.kbcheck_got + ", expected " + row.kbcheck_expected +
                                 (kb ? " (" + kb->reason + ")" : ""));
    }
    std::string letters;
    for (const GateVerdict& v : report->gates) letters += gate_letter(v);
    std::fprintf(out, "  %-48s %-14s %-8s %-8s %-13s %-8s %s\n", rel.c_str(), manifest->op.c_str(), row.expected.c_str(),
                 report->verdict.c_str(), letters.c_str(), row.kbcheck_got.empty() ? "" : row.kbcheck_got.c_str(),
                 row.mismatches.empty() ? "ok" : "MISMATCH");
    for (const std::string& m : row.mismatches) std::fprintf(out, "      %s\n", m.c_str());
    std::fflush(out);
    if (!row.mismatches.empty()) ++mismatched;
    nlohmann::json j = report_to_json(*report);
    j["manifest"] = rel;
    j["selftest"] = {{"expected", manifest->expect}, {"mismatches", row.mismatches}, {"kbcheck", row.kbcheck_got}};
    all.push_back(j);
    if (!options.json_path.empty()) {
      // Rewritten after every kernel, so an interrupted run keeps what it finished.
      write_file_atomic(options.json_path, all.dump(2) + "\n");
    }
  }
  std::fprintf(out, "gates: %s\n", "contract accuracy special-values subnormals shapes layouts determinism "
                                   "statelessness accumulation memory gradients provenance timing "
                                   "(. pass, F fail, E error, - skip, H harness-error)");
  std::fprintf(out, "selftest: %zu kernels, %d as declared, %d mismatched, %d harness errors", manifests.size(),
               int(manifests.size()) - mismatched - harness - skipped, mismatched, harness);
  if (skipped) std::fprintf(out, ", %d skipped (this machine cannot run them: no CUDA device, or a dtype its LibTorch lacks)", skipped);
  std::fprintf(out, "\n");
  return harness ? 2 : mismatched ? 1 : 0;
}

}  // namespace gauntlet
