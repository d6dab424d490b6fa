// The HTML audit report (`gauntlet report DB -o report.html`): one self-contained file, no network.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gauntlet {

// The figures the report plots, computed once here (the page's script only draws them), from an
// array of per-kernel records in the `verify --json` format (read_kernel_reports, selftest --json):
//   "kernels"      count; "verdicts" {verdict: count} (pass, unsafe, fail, error, incomplete)
//   "gates"        [{name, total, pass, fail, error, skip, harness-error, out_of_contract,
//                  failure_rate}] in the order gates first appear; failure_rate =
//                  (fail+error+harness-error) / (total-skip); out_of_contract = fails and errors
//                  whose scope is out-of-contract (contract_scope.h)
//   "categories"   [{name, count}] of failing gate verdicts (fail, error, harness-error) by
//                  category, most frequent first; "entry-error" for entries that are not kernels
//   "ops"          [{name, kernels, pass, unsafe, fail, error, incomplete}] by op name
//   "speedup"      {values: [...], bins: [{label, lo, hi, count}], median, geomean} of the timing
//                  gate's speedup over ATen, one value per timed dtype of a kernel whose timing passed
//   "utilization"  the same for roofline utilization (fraction of the roofline time)
//   "standard_check"  the standard check against gauntlet's verdict (standard_check.h's table)
nlohmann::json report_summary(const nlohmann::json& kernels);

struct HtmlReportOptions {
  std::string title = "gauntlet report";
  std::string source;     // what was read (the database's path), shown in the header
  std::string generated;  // when (shown as given; empty leaves it out)
};

// The whole page: inline CSS, the summary and the per-kernel records as inline JSON, an inline
// script that draws the plots as SVG, and the per-kernel table rendered here (so it reads without
// script). Every string from a record is escaped. Records that are not objects are ignored.
std::string render_html_report(const nlohmann::json& kernels, const HtmlReportOptions& options);

// A kernel's timing figures, one per timed dtype, from a passing timing gate's evidence
// (evidence.dtypes[].speedup and .roofline.utilization; positive, finite values only). A failing
// timing gate adds nothing: its figures are the implausible ones.
void timing_figures(const nlohmann::json& kernel, std::vector<double>* speedups, std::vector<double>* utilizations);

// report_summary's histograms, exposed for tests: the bin a value falls in.
int speedup_bin(double speedup);         // 0 .. kSpeedupBins-1, log2-spaced around 1x
int utilization_bin(double utilization);  // 0 .. kUtilizationBins-1, tenths, the last one >= 100%
constexpr int kSpeedupBins = 12;
constexpr int kUtilizationBins = 11;

}  // namespace gauntlet
