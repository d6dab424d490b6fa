// Renders docs/gate-table.md from `gauntlet selftest --json`: each gate, its planted bugs, the KernelBench-style check's word and gauntlet's.
//
// Usage: gauntlet_gate_table SELFTEST.json [MORE.json ...] [-o OUT.md]
// The table is generated, never written by hand: tools/gate-table.sh runs the selftest and this.
// Later reports add the kernels the first lacks (those a machine skipped: fp8_matmul's rows come
// from a GPU host whose PyTorch has float8); a kernel in several keeps its first report's row.
// Kernels a report ran on a GPU (environment.device "cuda") get a section of their own, apart from
// the CPU corpus' per-gate counts, naming the GPU that gave each verdict.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

using nlohmann::json;

const std::vector<std::string> kGates = {"contract",      "accuracy",     "special-values", "subnormals", "shapes",
                                         "layouts",       "determinism",  "statelessness",  "accumulation",
                                         "memory",        "gradients",    "provenance",     "timing"};

// Markdown table cells hold no pipes or newlines.
std::string cell(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

// The bug text's first sentence: the table stays readable, the manifest keeps the whole story.
std::string first_sentence(const std::string& s) {
  for (size_t i = 0; i + 1 < s.size(); ++i)
    if (s[i] == '.' && s[i + 1] == ' ' && i > 20) return s.substr(0, i + 1);
  return s;
}

// Points into `kernel` itself (value() would return a copy that dies with the loop).
const json* gate_of(const json& kernel, const std::string& name) {
  const auto it = kernel.find("gates");
  if (it == kernel.end() || !it->is_array()) return nullptr;
  for (const json& g : *it)
    if (g.is_object() && g.value("name", "") == name) return &g;
  return nullptr;
}

std::string verdict_text(const json* g) {
  if (!g) return "not run";
  std::string s = g->value("status", "?");
  const std::string cat = g->value("category", "");
  if (!cat.empty() && cat != "none") s += " (" + cat + ")";
  return s;
}

// Whether every gate passed or skipped with its reason (what a control must do).
bool passes_every_gate(const json& kernel) {
  for (const json& g : kernel.value("gates", json::array())) {
    const std::string s = g.value("status", "");
    if (s != "pass" && s != "skip") return false;
  }
  return true;
}

// The gates that failed or errored, in the report's order.
std::vector<std::string> failing_gates(const json& kernel) {
  std::vector<std::string> failing;
  for (const json& g : kernel.value("gates", json::array()))
    if (g.value("status", "") == "fail" || g.value("status", "") == "error") failing.push_back(g.value("name", ""));
  return failing;
}

// The gates a planted bug's manifest says must fail. A status list (["fail", "pass"]: a gate whose
// few cases may or may not meet the bug) is no such promise, nor is the catch-all "*".
std::vector<std::string> gates_declared_failing(const json& expected) {
  std::vector<std::string> gates;
  const json declared = expected.value("gates", json::object());  // named: items() of a temporary dangles
  for (const auto& [gate, rule] : declared.items()) {
    const json status = rule.is_object() ? rule.value("status", json()) : json();
    if (gate != "*" && status.is_string() && status.get<std::string>() == "fail") gates.push_back(gate);
  }
  return gates;
}

bool ran_on_gpu(const json& kernel) {
  const json env = kernel.value("environment", json::object());
  return env.is_object() && env.value("device", "") == "cuda";
}

std::string gpu_name(const json& kernel) {
  const json gpu = kernel.value("environment", json::object()).value("gpu", json::object());
  return gpu.is_object() ? gpu.value("name", "a GPU") : "a GPU";
}

std::string joined(const std::vector<std::string>& parts) {
  std::string s;
  for (const std::string& p : parts) s += (s.empty() ? "" : ", ") + p;
  return s.empty() ? "-" : s;
}

// The GPU kernels' section: one row a kernel (controls and planted bugs), since a CUDA twin's gates
// are the CPU kernel's and its counts would blur which machine measured what.
void render_gpu_section(const std::vector<const json*>& kernels, const std::set<std::string>& reports,
                        std::ostream& out) {
  int controls = 0, controls_clean = 0, bugs = 0, kb_accepts = 0, mismatched = 0;
  std::set<std::string> gpus;
  std::ostringstream rows;
  for (const json* k : kernels) {
    const json st = k->value("selftest", json::object());
    const json expected = st.value("expected", json::object());
    const bool ok = st.value("mismatches", json::array()).empty();
    mismatched += !ok;
    gpus.insert(gpu_name(*k));
    const std::vector<std::string> declared = gates_declared_failing(expected), failing = failing_gates(*k);
    const bool clean = passes_every_gate(*k);
    const bool control = expected.value("verdict", "") == "pass";
    if (!control && !expected.contains("bug")) continue;  // hostile kernels: not planted numerical bugs
    const std::string kb = st.value("kbcheck", "");
    if (control) controls += 1, controls_clean += clean;
    else bugs += 1, kb_accepts += kb == "accept";
    rows << "| `" << cell(k->value("manifest", "?")) << "` | " << cell(k->value("op", "")) << " | "
         << cell(control ? "control (correct)" : first_sentence(expected.value("bug", ""))) << " | "
         << cell(joined(declared)) << " | " << cell(joined(failing)) << (ok ? "" : " (NOT as declared)") << " | "
         << cell(control ? "-" : kb.empty() ? "not run" : kb) << " | " << cell(gpu_name(*k)) << " |\n";
  }
  out << "\n## CUDA kernels\n\nVerdicts of CUDA kernels (`corpus/controls_cuda/`, `corpus/bugs_cuda/`) measured "
         "on a GPU host, from";
  for (const std::string& r : reports) out << " `" << r << "`";
  out << " (GPU: " << joined(std::vector<std::string>(gpus.begin(), gpus.end())) << ").\n\n"
      << "- Correct controls: " << controls_clean << " of " << controls << " pass every gate.\n"
      << "- Planted bugs: " << bugs << "; the KernelBench-style check accepts " << kb_accepts << " of them.\n"
      << "- Kernels whose verdict differs from their manifest's declaration: " << mismatched << ".\n\n"
      << "| kernel | op | what is wrong | gates it must fail | gates gauntlet failed | KernelBench-style check | "
         "GPU |\n|---|---|---|---|---|---|---|\n"
      << rows.str();
}

struct Row {
  std::string manifest, op, bug, kbcheck, verdict, others;
  bool as_declared = true;
};

// `added`: kernels taken from a later report, by report (said under the summary).
// `gpu_reports`: the reports the GPU kernels came from.
int render(const json& kernels, const std::map<std::string, std::vector<std::string>>& added,
           const std::set<std::string>& gpu_reports, std::ostream& out) {
  std::map<std::string, std::vector<Row>> by_gate;
  std::vector<const json*> gpu_kernels;
  int controls = 0, controls_clean = 0, bugs = 0, kb_accepts = 0, mismatched = 0;
  std::vector<std::string> unclean;
  for (const json& k : kernels) {
    if (ran_on_gpu(k)) {
      gpu_kernels.push_back(&k);
      continue;
    }
    const std::string manifest = k.value("manifest", k.value("source", "?"));
    const json st = k.value("selftest", json::object());
    const json expected = st.value("expected", json::object());
    const bool ok = st.value("mismatches", json::array()).empty();
    mismatched += !ok;
    if (expected.value("verdict", "") == "pass") {
      ++controls;
      const bool clean = passes_every_gate(k);
      controls_clean += clean;
      if (!clean) unclean.push_back(manifest);
      continue;
    }
    if (!expected.contains("bug")) continue;  // hostile kernels: not planted numerical bugs
    ++bugs;
    const std::string kb = st.value("kbcheck", "");
    kb_accepts += kb == "accept";
    const std::vector<std::string> failing = failing_gates(k);
    for (const std::string& gate : gates_declared_failing(expected)) {  // a row under each gate that must fail
      Row r;
      r.manifest = manifest;
      r.op = k.value("op", "");
      r.bug = first_sentence(expected.value("bug", ""));
      r.kbcheck = kb.empty() ? "not run" : kb;
      r.verdict = verdict_text(gate_of(k, gate));
      for (const std::string& f : failing)
        if (f != gate) r.others += (r.others.empty() ? "" : ", ") + f;
      r.as_declared = ok;
      by_gate[gate].push_back(r);
    }
  }

  out << "# Gates and their planted bugs\n\n"
         "Generated by `tools/gate-table.sh` (tools/gate_table/gate_table.cpp) from `gauntlet selftest --json`; "
         "do not edit by hand. Each planted bug is a kernel in `corpus/bugs/` whose manifest declares the gates "
         "that must fail; \"KernelBench-style check\" is `gauntlet kbcheck` (five U[0,1) trials at one shape, "
         "float32, allclose atol = rtol = 1e-2 against the library op). CUDA kernels measured on a GPU host have "
         "their own section at the end.\n\n";
  if (!kernels.empty()) out << "Seed " << kernels[0].value("seed", 0ull) << ".\n\n";
  out << "- Correct controls: " << controls_clean << " of " << controls << " pass every gate (pass, or skip with "
      << "its reason)";
  if (!unclean.empty()) {
    out << "; not clean:";
    for (const auto& u : unclean) out << " `" << u << "`";
  }
  out << ".\n- Planted bugs: " << bugs << "; the KernelBench-style check accepts " << kb_accepts << " of them.\n"
      << "- Kernels whose verdict differs from their manifest's declaration: " << mismatched << ".\n";
  for (const auto& [path, names] : added) {
    out << "- From `" << path << "` (kernels the first report skipped):";
    for (const std::string& n : names) out << " `" << n << "`";
    out << ".\n";
  }
  out << "\n";

  out << "| gate | planted bugs | accepted by the KernelBench-style check | failed by gauntlet's gate |\n"
         "|---|---|---|---|\n";
  for (const std::string& gate : kGates) {
    const auto it = by_gate.find(gate);
    int n = 0, kb = 0, caught = 0;
    if (it != by_gate.end())
      for (const Row& r : it->second) {
        ++n;
        kb += r.kbcheck == "accept";
        caught += r.verdict.rfind("fail", 0) == 0;
      }
    out << "| " << gate << " | " << n << " | " << kb << " | " << caught << " |\n";
  }
  for (const std::string& gate : kGates) {
    const auto it = by_gate.find(gate);
    if (it == by_gate.end()) continue;
    out << "\n## " << gate << "\n\n"
        << "| planted bug | op | what is wrong | KernelBench-style check | gauntlet (" << gate
        << ") | also failed by |\n|---|---|---|---|---|---|\n";
    for (const Row& r : it->second)
      out << "| `" << cell(r.manifest) << "` | " << cell(r.op) << " | " << cell(r.bug) << " | " << cell(r.kbcheck)
          << " | " << cell(r.verdict) << (r.as_declared ? "" : " (NOT as declared)") << " | "
          << cell(r.others.empty() ? "-" : r.others) << " |\n";
  }
  if (!gpu_kernels.empty()) render_gpu_section(gpu_kernels, gpu_reports, out);
  return 0;
}

}  // namespace

// One selftest report (a JSON array of kernels), or a one-line error.
bool read_report(const std::string& path, json* kernels, std::string* error) {
  std::ifstream in(path);
  if (!in) return (*error = "cannot read " + path, false);
  try {
    *kernels = json::parse(in);
  } catch (const std::exception& e) {
    return (*error = path + " is not JSON: " + e.what(), false);
  }
  if (!kernels->is_array()) return (*error = path + " is not a selftest report (expected a JSON array)", false);
  return true;
}

int main(int argc, char** argv) {
  const char* usage = "usage: gauntlet_gate_table SELFTEST.json [MORE.json ...] [-o OUT.md]";
  std::vector<std::string> in_paths;
  std::string out_path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-o" && i + 1 < argc) out_path = argv[++i];
    else if (a == "-h" || a == "--help") {
      std::puts(usage);
      return 0;
    } else in_paths.push_back(a);
  }
  if (in_paths.empty()) {
    std::fprintf(stderr, "gauntlet_gate_table: error: no selftest JSON given (%s)\n", usage);
    return 2;
  }
  json kernels = json::array();
  std::set<std::string> seen;
  std::map<std::string, std::vector<std::string>> added;
  std::set<std::string> gpu_reports;
  for (const std::string& path : in_paths) {
    json report;
    std::string error;
    if (!read_report(path, &report, &error)) {
      std::fprintf(stderr, "gauntlet_gate_table: error: %s\n", error.c_str());
      return 2;
    }
    for (json& k : report) {
      const std::string manifest = k.is_object() ? k.value("manifest", std::string()) : std::string();
      if (!manifest.empty() && !seen.insert(manifest).second) continue;  // the first report's row stands
      if (ran_on_gpu(k)) gpu_reports.insert(path);
      else if (&path != &in_paths[0]) added[path].push_back(manifest.empty() ? "?" : manifest);
      kernels.push_back(std::move(k));
    }
  }
  const std::string in_path = in_paths.size() == 1 ? in_paths[0] : "(" + std::to_string(in_paths.size()) + " reports)";
  std::ostringstream md;
  try {
    render(kernels, added, gpu_reports, md);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gauntlet_gate_table: error: malformed selftest report %s: %s\n", in_path.c_str(), e.what());
    return 2;
  }
  if (out_path.empty()) {
    std::cout << md.str();
    return 0;
  }
  std::ofstream out(out_path);
  out << md.str();
  if (!out) {
    std::fprintf(stderr, "gauntlet_gate_table: error: cannot write %s\n", out_path.c_str());
    return 2;
  }
  return 0;
}
