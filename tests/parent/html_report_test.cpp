// The HTML report: the plotted figures (rates, categories, per-op, timing histograms), escaping, self-containment.
#include "gauntlet/html_report.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

using nlohmann::json;

namespace {

// Five records like an audit database holds: a passing softmax with timing for two dtypes, a sum
// failing accumulation with a hostile message, a relu that did not build, a broken entry and an
// incomplete gelu.
json fixture() {
  std::ifstream in(GAUNTLET_TEST_DATA "/report/records.json");
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

const json& named(const json& list, const std::string& name) {
  for (const json& x : list)
    if (x["name"] == name) return x;
  static const json none;
  ADD_FAILURE() << "no " << name << " in " << list.dump();
  return none;
}

}  // namespace

TEST(HtmlReport, SummaryCountsGatesCategoriesAndOps) {
  const json s = gauntlet::report_summary(fixture());
  EXPECT_EQ(s["kernels"], 5);
  EXPECT_EQ(s["verdicts"], json({{"pass", 1}, {"fail", 1}, {"error", 2}, {"incomplete", 1}}));
  ASSERT_EQ(s["gates"].size(), 13u);
  EXPECT_EQ(s["gates"][0]["name"], "contract") << "gates keep the order they first appear in";
  EXPECT_EQ(s["gates"][12]["name"], "timing");
  const json& contract = named(s["gates"], "contract");
  EXPECT_EQ(contract["total"], 4);
  EXPECT_EQ(contract["pass"], 3);
  EXPECT_EQ(contract["error"], 1);
  EXPECT_DOUBLE_EQ(contract["failure_rate"].get<double>(), 0.25);
  const json& accumulation = named(s["gates"], "accumulation");
  EXPECT_EQ(accumulation["fail"], 1);
  EXPECT_DOUBLE_EQ(accumulation["failure_rate"].get<double>(), 2.0 / 3.0);
  // Skips are not judged: timing passed once and was skipped twice, so nothing of it failed.
  const json& timing = named(s["gates"], "timing");
  EXPECT_EQ(timing["skip"], 2);
  EXPECT_DOUBLE_EQ(timing["failure_rate"].get<double>(), 0.0);
  // Categories: most frequent first, the broken entry counted as entry-error.
  EXPECT_EQ(s["categories"][0], json({{"name", "build-error"}, {"count", 12}}));
  EXPECT_EQ(named(s["categories"], "wrong-result")["count"], 1);
  EXPECT_EQ(named(s["categories"], "timeout")["count"], 1);
  EXPECT_EQ(named(s["categories"], "entry-error")["count"], 1);
  EXPECT_EQ(s["categories"].size(), 4u);
  EXPECT_EQ(s["ops"].size(), 5u);
  EXPECT_EQ(named(s["ops"], "sum")["fail"], 1);
  EXPECT_EQ(named(s["ops"], "gelu")["incomplete"], 1);
  EXPECT_EQ(named(s["ops"], "(unknown)")["error"], 1);
}

TEST(HtmlReport, TimingHistogramsFromPassingTimingEvidence) {
  const json s = gauntlet::report_summary(fixture());
  EXPECT_EQ(s["speedup"]["values"], json({0.8, 1.5}));
  EXPECT_EQ(s["utilization"]["values"], json({0.15, 0.35}));
  ASSERT_EQ(s["speedup"]["bins"].size(), size_t(gauntlet::kSpeedupBins));
  ASSERT_EQ(s["utilization"]["bins"].size(), size_t(gauntlet::kUtilizationBins));
  EXPECT_EQ(s["speedup"]["bins"][5]["count"], 1);  // [1/2, 1)
  EXPECT_EQ(s["speedup"]["bins"][6]["count"], 1);  // [1, 2)
  EXPECT_EQ(s["speedup"]["bins"][6]["label"], "1\u20132\u00d7");
  EXPECT_EQ(s["utilization"]["bins"][1]["count"], 1);
  EXPECT_EQ(s["utilization"]["bins"][3]["count"], 1);
  EXPECT_NEAR(s["speedup"]["geomean"].get<double>(), std::sqrt(0.8 * 1.5), 1e-12);
  EXPECT_DOUBLE_EQ(s["speedup"]["median"].get<double>(), 1.15);
  // Bin edges: each speedup bin a factor of two, open-ended at both ends.
  EXPECT_EQ(gauntlet::speedup_bin(1.0), 6);
  EXPECT_EQ(gauntlet::speedup_bin(0.999), 5);
  EXPECT_EQ(gauntlet::speedup_bin(1e-9), 0);
  EXPECT_EQ(gauntlet::speedup_bin(1e9), gauntlet::kSpeedupBins - 1);
  EXPECT_EQ(gauntlet::speedup_bin(0), 0);
  EXPECT_EQ(gauntlet::utilization_bin(0.999), 9);
  EXPECT_EQ(gauntlet::utilization_bin(1.0), 10);
  EXPECT_EQ(gauntlet::utilization_bin(7.5), 10);
}

TEST(HtmlReport, NothingFromARecordReachesThePageUnescaped) {
  const std::string page = gauntlet::render_html_report(fixture(), {"t <b>", "db's path", "now"});
  // The hostile message carries a </script>, a <script> and an <img onerror>: the page has only
  // its own two script elements, and the message shows as text.
  EXPECT_EQ(count(page, "<script"), 2u);
  EXPECT_EQ(count(page, "</script"), 2u);
  EXPECT_EQ(count(page, "<img"), 0u);
  EXPECT_NE(page.find("&lt;/script&gt;&lt;script&gt;document.body.setAttribute(&quot;data-pwned&quot;"), std::string::npos);
  EXPECT_NE(page.find("<title>t &lt;b&gt;</title>"), std::string::npos);
  EXPECT_NE(page.find("bugs/accumulation/sum_half_&lt;combine&gt;.json"), std::string::npos);
  // Every kernel has its row, failing gates their replay command.
  EXPECT_EQ(count(page, "<tr data-verdict="), 5u);
  EXPECT_NE(page.find("<code class=\"replay\">gauntlet replay gauntlet-out/replays/sum-cccccccccccc-accumulation.json</code>"),
            std::string::npos);
  EXPECT_NE(page.find("broken/manifest.json: field &#39;op&#39;: required string"), std::string::npos);
  // The kernel that did not build shows its compiler output once, not twelve identical gate errors.
  EXPECT_NE(page.find("relu_syntax.cpp:4:3: error: expected &#39;;&#39; before &#39;}&#39; token"), std::string::npos);
  EXPECT_EQ(count(page, "the kernel did not build"), 0u);
  EXPECT_NE(page.find("<td>1.10\u00d7</td>"), std::string::npos) << "the geometric-mean speedup of the timed dtypes";
}

TEST(HtmlReport, PageIsSelfContained) {
  json records = fixture();
  records.erase(1);  // the hostile message quotes an <img src=...> as text
  const std::string page = gauntlet::render_html_report(records, {});
  // Nothing to fetch: no src/href attributes, no CSS url(), no imports; the only URL is the SVG
  // namespace name, which is an identifier, never loaded.
  for (const char* needle : {" src=", " href=", "url(", "@import", "<link", "<iframe", "fetch(", "XMLHttpRequest"})
    EXPECT_EQ(page.find(needle), std::string::npos) << needle;
  size_t urls = count(page, "http://") + count(page, "https://");
  EXPECT_EQ(urls, count(page, "http://www.w3.org/2000/svg"));
  EXPECT_EQ(count(page, "data-plot=\""), 5u) << "gates, categories, ops, speedup, utilization";
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
}

TEST(HtmlReport, EmptyAndMalformedInputStillRender) {
  for (const json& input : {json::array(), json::object(), json(42), json::array({1, "x", json::array()})}) {
    const std::string page = gauntlet::render_html_report(input, {});
    EXPECT_EQ(count(page, "<tr data-verdict="), 0u);
    EXPECT_EQ(gauntlet::report_summary(input)["kernels"], 0);
  }
}
