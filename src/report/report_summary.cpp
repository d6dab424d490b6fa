// The figures the HTML report plots: gate failure rates, categories, per-op verdicts, timing histograms.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "gauntlet/cases/contract_scope.h"
#include "gauntlet/report/html_report.h"
#include "gauntlet/run/report_text.h"
#include "gauntlet/run/standard_check.h"

namespace gauntlet {

namespace {

std::string fraction_label(int exponent) {
  // 2^exponent as "1/8" or "4": the bin edges of the speedup histogram.
  if (exponent >= 0) return std::to_string(1 << exponent);
  return "1/" + std::to_string(1 << -exponent);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double geomean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double s = 0;
  for (double x : v) s += std::log(x);
  return std::exp(s / double(v.size()));
}

nlohmann::json histogram(const std::vector<double>& values, int bins, int (*bin_of)(double),
                         const std::vector<std::string>& labels, const std::vector<double>& edges) {
  std::vector<int> counts(size_t(bins), 0);
  for (double v : values) counts[size_t(bin_of(v))]++;
  nlohmann::json out = nlohmann::json::array();
  for (int b = 0; b < bins; ++b)
    out.push_back({{"label", labels[size_t(b)]}, {"lo", edges[size_t(b)]}, {"hi", edges[size_t(b) + 1]},
                   {"count", counts[size_t(b)]}});
  return {{"values", values}, {"bins", out}, {"median", median(values)}, {"geomean", geomean(values)}};
}

}  // namespace

void timing_figures(const nlohmann::json& k, std::vector<double>* speedups, std::vector<double>* utilizations) {
  if (!k.is_object()) return;
  auto gates = k.find("gates");
  if (gates == k.end() || !gates->is_array()) return;
  for (const nlohmann::json& g : *gates) {
    if (!g.is_object() || json_text(g, "name") != "timing" || json_text(g, "status") != "pass") continue;
    auto ev = g.find("evidence");
    if (ev == g.end() || !ev->is_object() || !ev->contains("dtypes") || !(*ev)["dtypes"].is_array()) continue;
    for (const nlohmann::json& d : (*ev)["dtypes"]) {
      if (!d.is_object()) continue;
      auto s = d.find("speedup");
      if (s != d.end() && s->is_number() && std::isfinite(s->get<double>()) && s->get<double>() > 0)
        speedups->push_back(s->get<double>());
      auto r = d.find("roofline");
      if (r != d.end() && r->is_object() && r->contains("utilization") && (*r)["utilization"].is_number()) {
        const double u = (*r)["utilization"].get<double>();
        if (std::isfinite(u) && u > 0) utilizations->push_back(u);
      }
    }
  }
}

int speedup_bin(double speedup) {
  if (!(speedup > 0)) return 0;
  // Bin 6 is [1x, 2x): each bin a factor of two, the first and last open-ended.
  const int b = int(std::floor(std::log2(speedup))) + 6;
  return std::clamp(b, 0, kSpeedupBins - 1);
}

int utilization_bin(double utilization) {
  if (!(utilization > 0)) return 0;
  return std::clamp(int(std::floor(utilization * 10)), 0, kUtilizationBins - 1);
}

nlohmann::json report_summary(const nlohmann::json& kernels) {
  nlohmann::json verdicts = nlohmann::json::object();
  std::vector<std::string> gate_order;
  std::map<std::string, std::map<std::string, int>> gate_counts;
  std::map<std::string, int> categories;
  std::map<std::string, std::map<std::string, int>> op_counts;
  std::vector<double> speedups, utilizations;
  int count = 0;
  if (kernels.is_array()) {
    for (const nlohmann::json& k : kernels) {
      if (!k.is_object()) continue;
      ++count;
      std::string verdict = json_text(k, "verdict");
      if (verdict.empty()) verdict = "incomplete";
      verdicts[verdict] = verdicts.value(verdict, 0) + 1;
      std::string op = json_text(k, "op");
      if (op.empty()) op = "(unknown)";
      op_counts[op]["kernels"]++;
      op_counts[op][verdict]++;
      if (!json_text(k, "entry_error").empty()) categories["entry-error"]++;
      auto gates = k.find("gates");
      if (gates != k.end() && gates->is_array()) {
        for (const nlohmann::json& g : *gates) {
          if (!g.is_object()) continue;
          const std::string name = json_text(g, "name"), status = json_text(g, "status");
          if (name.empty()) continue;
          if (!gate_counts.count(name)) gate_order.push_back(name);
          gate_counts[name]["total"]++;
          gate_counts[name][status]++;
          if (status == "fail" || status == "error" || status == "harness-error") {
            const std::string category = json_text(g, "category");
            categories[category.empty() ? status : category]++;
          }
          // A harness-error is gauntlet's fault whatever case it ran, so it never counts as the
          // kernel failing outside its contract (contract_scope.h's fails_in_contract).
          if ((status == "fail" || status == "error") && json_text(g, "scope") == kOutOfContract)
            gate_counts[name]["out_of_contract"]++;
        }
      }
      timing_figures(k, &speedups, &utilizations);
    }
  }
  nlohmann::json gates = nlohmann::json::array();
  for (const std::string& name : gate_order) {
    auto& c = gate_counts[name];
    const int judged = c["total"] - c["skip"];
    const int failing = c["fail"] + c["error"] + c["harness-error"];
    gates.push_back({{"name", name}, {"total", c["total"]}, {"pass", c["pass"]}, {"fail", c["fail"]},
                     {"error", c["error"]}, {"skip", c["skip"]}, {"harness-error", c["harness-error"]},
                     {"out_of_contract", c["out_of_contract"]},
                     {"failure_rate", judged > 0 ? double(failing) / judged : 0.0}});
  }
  std::vector<std::pair<std::string, int>> cats(categories.begin(), categories.end());
  std::stable_sort(cats.begin(), cats.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  nlohmann::json category_list = nlohmann::json::array();
  for (const auto& [name, n] : cats) category_list.push_back({{"name", name}, {"count", n}});
  nlohmann::json ops = nlohmann::json::array();
  for (auto& [name, c] : op_counts)
    ops.push_back({{"name", name}, {"kernels", c["kernels"]}, {"pass", c["pass"]}, {"unsafe", c["unsafe"]},
                   {"fail", c["fail"]}, {"error", c["error"]}, {"incomplete", c["incomplete"]}});

  std::vector<std::string> s_labels;
  std::vector<double> s_edges = {0};
  for (int b = 0; b < kSpeedupBins; ++b) {
    const int lo = b - 6, hi = b - 5;
    if (b == 0) s_labels.push_back("<" + fraction_label(hi) + "\u00d7");
    else if (b == kSpeedupBins - 1) s_labels.push_back("\u2265" + fraction_label(lo) + "\u00d7");
    else s_labels.push_back(fraction_label(lo) + "\u2013" + fraction_label(hi) + "\u00d7");
    s_edges.push_back(b == kSpeedupBins - 1 ? -1 : std::ldexp(1.0, hi));  // -1: unbounded
  }
  std::vector<std::string> u_labels;
  std::vector<double> u_edges = {0};
  for (int b = 0; b < kUtilizationBins; ++b) {
    u_labels.push_back(b == kUtilizationBins - 1 ? "\u2265100%"
                                                 : std::to_string(10 * b) + "\u2013" + std::to_string(10 * b + 10) + "%");
    u_edges.push_back(b == kUtilizationBins - 1 ? -1 : 0.1 * (b + 1));
  }
  return {{"kernels", count},
          {"verdicts", verdicts},
          {"gates", gates},
          {"categories", category_list},
          {"ops", ops},
          {"speedup", histogram(speedups, kSpeedupBins, speedup_bin, s_labels, s_edges)},
          {"utilization", histogram(utilizations, kUtilizationBins, utilization_bin, u_labels, u_edges)},
          {"standard_check", standard_check_table(kernels)}};
}

}  // namespace gauntlet
