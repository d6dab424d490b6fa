// The HTML report: the plotted figures (rates, categories, per-op, timing histograms), escaping, self-containment.
#include "gauntlet/report/html_report.h"

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

namespace {

// An unsafe softmax (layouts fails only on a layout it does not declare), a relu stored before
// gates had scopes (its layouts failure counts as in-contract), and a harness-error marked
// out-of-contract (gauntlet's fault whatever the case: never the kernel's unsafety).
json unsafe_records() {
  json unsafe = {{"verdict", "unsafe"}, {"op", "softmax"}, {"source", "corpus/x/softmax_rows.cpp"}, {"kernel_hash", "dd01"}};
  unsafe["gates"] = {{{"name", "contract"}, {"status", "pass"}, {"scope", "in-contract+out-of-contract"}},
                     {{"name", "layouts"}, {"status", "fail"}, {"category", "wrong-result"}, {"scope", "out-of-contract"},
                      {"message", "transposed x: y[0,1]: 2 vs 3"}, {"replay", "out/replays/softmax-dd01-layouts.json"}},
                     {{"name", "memory"}, {"status", "pass"}, {"scope", "in-contract"}}};
  json old = {{"verdict", "fail"}, {"op", "relu"}, {"source", "corpus/x/relu_old.cpp"}, {"kernel_hash", "ee02"}};
  old["gates"] = {{{"name", "contract"}, {"status", "pass"}},
                  {{"name", "layouts"}, {"status", "fail"}, {"category", "wrong-result"}, {"message", "y[3]: 1 vs 0"}},
                  {{"name", "memory"}, {"status", "pass"}}};
  json harness = {{"verdict", "error"}, {"op", "relu"}, {"source", "corpus/x/relu_h.cpp"}, {"kernel_hash", "ff03"}};
  harness["gates"] = {{{"name", "contract"}, {"status", "pass"}, {"scope", "in-contract"}},
                      {{"name", "layouts"}, {"status", "pass"}, {"scope", "in-contract"}},
                      {{"name", "memory"}, {"status", "harness-error"}, {"category", "harness-error"},
                       {"scope", "out-of-contract"}, {"message", "no worker"}}};
  return json::array({unsafe, old, harness});
}

}  // namespace

TEST(HtmlReport, SummaryCountsUnsafeKernelsAndOutOfContractGatesApart) {
  // .value(): a missing count must fail the test, not read past a const object.
  const json s = gauntlet::report_summary(unsafe_records());
  EXPECT_EQ(s["verdicts"], json({{"unsafe", 1}, {"fail", 1}, {"error", 1}}));
  EXPECT_EQ(named(s["ops"], "softmax").value("unsafe", -1), 1);
  EXPECT_EQ(named(s["ops"], "softmax")["fail"], 0);
  EXPECT_EQ(named(s["ops"], "relu").value("unsafe", -1), 0);
  const json& layouts = named(s["gates"], "layouts");
  EXPECT_EQ(layouts["fail"], 2);
  EXPECT_EQ(layouts.value("out_of_contract", -1), 1) << "the old record's failure has no scope: in-contract";
  EXPECT_DOUBLE_EQ(layouts["failure_rate"].get<double>(), 2.0 / 3.0) << "out-of-contract failures still fail the gate";
  EXPECT_EQ(named(s["gates"], "memory").value("out_of_contract", -1), 0) << "a harness-error is never the kernel's unsafety";
  EXPECT_EQ(named(s["gates"], "contract").value("out_of_contract", -1), 0) << "passes are not counted";
  // Records from before scopes existed count nothing out of contract.
  for (const json& g : gauntlet::report_summary(fixture())["gates"])
    EXPECT_EQ(g.value("out_of_contract", -1), 0) << g["name"];
}

TEST(HtmlReport, PageShowsUnsafeApartAndMarksOutOfContractGates) {
  const std::string page = gauntlet::render_html_report(unsafe_records(), {});
  EXPECT_NE(page.find("<option value=\"unsafe\">unsafe</option>"), std::string::npos) << "the verdict filter";
  EXPECT_NE(page.find("<tr data-verdict=\"unsafe\""), std::string::npos);
  EXPECT_NE(page.find("<span class=\"verdict unsafe\">unsafe</span>"), std::string::npos);
  EXPECT_NE(page.find("<div class=\"tile unsafe\"><b>1</b>unsafe</div>"), std::string::npos);
  // Its own colour, distinct from fail and error, for the verdict, the tile, the bars and the legend.
  EXPECT_NE(page.find("--unsafe: #"), std::string::npos);
  for (const char* rule : {".verdict.unsafe { color: var(--unsafe)", ".tile.unsafe b { color: var(--unsafe)",
                           ".bar.unsafe { fill: var(--unsafe)", ".legend .unsafe { background: var(--unsafe)"})
    EXPECT_NE(page.find(rule), std::string::npos) << rule;
  // The ops plot: its legend and the script's stacked keys both have unsafe.
  EXPECT_EQ(count(page, "<i class=\"unsafe\"></i>unsafe"), 1u);
  EXPECT_NE(page.find("data.ops, [\"pass\", \"unsafe\", \"fail\", \"error\", \"incomplete\"]"), std::string::npos);
  // Only the out-of-contract layouts failure is tagged: not the old record's, not the harness-error.
  EXPECT_EQ(count(page, "<span class=\"scope out-of-contract\""), 1u);
  const size_t tag = page.find("outside its contract</span>");
  ASSERT_NE(tag, std::string::npos);
  EXPECT_EQ(page.compare(page.rfind("<tr data-verdict=", tag), 26, "<tr data-verdict=\"unsafe\" "), 0)
      << "the tag is in the unsafe kernel's row";
  EXPECT_NE(page.find("Failing only outside the kernel&#39;s declared contract (counted in fail and error): layouts 1."),
            std::string::npos)
      << "the gates plot's note names the gates failing only outside contracts";
  // Records without unsafe kernels or scopes show the tile at 0 and no tag or note.
  const std::string old = gauntlet::render_html_report(fixture(), {});
  EXPECT_NE(old.find("<div class=\"tile unsafe\"><b>0</b>unsafe</div>"), std::string::npos);
  EXPECT_EQ(old.find("class=\"scope out-of-contract\""), std::string::npos);
  EXPECT_EQ(old.find("Failing only outside"), std::string::npos);
}

namespace {

// unsafe_records() with a root cause on the unsafe kernel and a standard check on each: the unsafe
// softmax accepted, the old relu rejected, and a fourth kernel that passes every gate while the
// standard check rejects it (a false negative of gauntlet's or a false alarm of the standard check).
json checked_records() {
  json records = unsafe_records();
  records[0]["root_cause"] = {{"gate", "layouts"},
                              {"scope", "out-of-contract"},
                              {"case", "float32 [4, 8] transposed"},
                              {"elements", 32},
                              {"diagnosis", "contiguous-read"},
                              {"text", "reads <x> as contiguous"},
                              {"gates", {"layouts"}},
                              {"other_gates", json::array()}};
  auto check = [](const std::string& verdict, const std::string& reason) {
    return json({{"verdict", verdict}, {"reason", reason}, {"check", "kbcheck"}, {"seconds", 0.1}});
  };
  records[0]["standard_check"] = check("accept", "5 trials of U[0,1) inputs at one shape pass allclose(1e-2)");
  records[1]["standard_check"] = check("reject", "trial 0: allclose(rtol=1e-2, atol=1e-2) fails");
  json odd = {{"verdict", "pass"}, {"op", "gelu"}, {"source", "corpus/x/gelu_odd.py"}, {"kernel_hash", "aa04"},
              {"gates", {{{"name", "accuracy"}, {"status", "pass"}, {"scope", "in-contract"}}}}};
  odd["standard_check"] = check("reject", "trial 2: output shape mismatch: expected [4], got [2, 2]");
  records.push_back(odd);
  return records;
}

}  // namespace

TEST(HtmlReport, RootCauseLeadsAFailingKernelsRow) {
  const std::string page = gauntlet::render_html_report(checked_records(), {});
  const size_t cause = page.find("<div class=\"cause\"><span class=\"name\">root cause</span> out-of-contract, layouts, "
                                 "contiguous-read: reads &lt;x&gt; as contiguous</div>");
  ASSERT_NE(cause, std::string::npos) << "escaped, and before the failing gates";
  EXPECT_LT(cause, page.find("transposed x: y[0,1]: 2 vs 3")) << "the cause leads the row's gates";
  EXPECT_EQ(page.compare(page.rfind("<tr data-verdict=", cause), 26, "<tr data-verdict=\"unsafe\" "), 0);
  EXPECT_EQ(count(page, "class=\"cause\""), 1u) << "records without a root cause keep today's display";
  EXPECT_EQ(gauntlet::render_html_report(unsafe_records(), {}).find("class=\"cause\""), std::string::npos);
}

TEST(HtmlReport, StandardCheckMatrixAndFlaggedKernelsFirst) {
  const json summary = gauntlet::report_summary(checked_records());
  EXPECT_EQ(summary["standard_check"]["accept"], json({{"pass", 0}, {"unsafe", 1}, {"fail", 0}}));
  EXPECT_EQ(summary["standard_check"]["reject"], json({{"pass", 1}, {"unsafe", 0}, {"fail", 1}}));
  EXPECT_EQ(summary["standard_check"]["not_run"], 1) << "the harness-error kernel has none";
  const std::string page = gauntlet::render_html_report(checked_records(), {});
  EXPECT_NE(page.find("<h2>Standard check against gauntlet</h2>"), std::string::npos);
  for (const auto& [cell, n] : std::vector<std::pair<std::string, int>>{
           {"accept-pass", 0}, {"accept-unsafe", 1}, {"accept-fail", 0}, {"reject-unsafe", 0}, {"reject-fail", 1}})
    EXPECT_NE(page.find("<td data-cell=\"" + cell + "\">" + std::to_string(n) + "</td>"), std::string::npos) << cell;
  EXPECT_NE(page.find("<td class=\"flagged\" data-cell=\"reject-pass\">1</td>"), std::string::npos);
  EXPECT_NE(page.find("1 without one"), std::string::npos);
  // The flagged kernel leads the table, tagged; the others follow in record order.
  const size_t first_row = page.find("<tr data-verdict=");
  const std::string flagged_row = "<tr data-verdict=\"pass\" data-op=\"gelu\">";
  EXPECT_EQ(page.compare(first_row, flagged_row.size(), flagged_row), 0) << page.substr(first_row, 60);
  EXPECT_EQ(count(page, "<span class=\"flag\""), 1u);
  EXPECT_LT(page.find("<span class=\"flag\""), page.find("<tr data-verdict=", first_row + 1));
  // Each row's standard check, its reason on hover; a dash for the kernel without one.
  EXPECT_NE(page.find("<th>standard check</th>"), std::string::npos);
  EXPECT_NE(page.find("<span class=\"check reject\" title=\"kbcheck: trial 2: output shape mismatch: expected [4], "
                      "got [2, 2]\">reject</span>"),
            std::string::npos);
  EXPECT_EQ(count(page, "<span class=\"check "), 3u);
  // Records without standard checks: no matrix, no column.
  const std::string plain = gauntlet::render_html_report(unsafe_records(), {});
  EXPECT_EQ(plain.find("Standard check against gauntlet"), std::string::npos);
  EXPECT_EQ(plain.find("<th>standard check</th>"), std::string::npos);
}
