// End to end: `verify --junit` parsed by a real XML parser, `gauntlet report` rendered in headless Chromium.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <vector>

#include "e2e_util.h"

using namespace gauntlet::e2e;

namespace {

const std::string kCorpus = GAUNTLET_SOURCE_DIR "/corpus";
const std::string kRecords = GAUNTLET_SOURCE_DIR "/tests/data/report/records.json";

// Runs a shell command; its standard output (standard error discarded unless redirected).
std::string shell(const std::string& command, int* status = nullptr) {
  std::string out;
  if (FILE* p = popen(command.c_str(), "r")) {
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    const int rc = pclose(p);
    if (status) *status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  }
  return out;
}

// The file validates against docs/junit.xsd (xmllint, which CI installs; skipped where missing).
void expect_valid_junit(const std::string& path) {
  if (shell("command -v xmllint 2>/dev/null").empty()) return;
  int status = 0;
  const std::string out =
      shell("xmllint --noout --schema '" GAUNTLET_SOURCE_DIR "/docs/junit.xsd' '" + path + "' 2>&1", &status);
  EXPECT_EQ(status, 0) << out;
}

// A headless Chromium: $GAUNTLET_CHROMIUM, else the first of Debian's and others' names on PATH.
std::string find_chromium() {
  if (const char* env = getenv("GAUNTLET_CHROMIUM"); env && *env) return env;
  for (const char* name : {"chromium", "chromium-browser", "google-chrome", "chrome"}) {
    std::string path = shell(std::string("command -v ") + name + " 2>/dev/null");
    while (!path.empty() && path.back() == '\n') path.pop_back();
    if (!path.empty()) return path;
  }
  return "";
}

// The DOM after the page's scripts ran. --no-sandbox: Chromium refuses to run as root otherwise
// (CI runs as root), and the page is our own file.
std::string rendered_dom(const std::string& chromium, const std::string& html_path, const std::string& dir) {
  return shell("timeout 120 '" + chromium + "' --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir='" +
               dir + "/chromium-profile' --dump-dom 'file://" + html_path + "' 2>/dev/null");
}

std::vector<std::string> matches(const std::string& text, const std::string& pattern) {
  std::vector<std::string> out;
  const std::regex re(pattern);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1].str());
  return out;
}

// The <svg data-plot=KIND ...> element of the dumped DOM, up to its closing tag.
std::string plot_element(const std::string& dom, const std::string& kind) {
  const size_t start = dom.find("data-plot=\"" + kind + "\"");
  if (start == std::string::npos) return "";
  const size_t open = dom.rfind("<svg", start);
  const size_t end = dom.find("</svg>", start);
  return end == std::string::npos ? "" : dom.substr(open, end - open);
}

}  // namespace

TEST(Junit, VerifyWritesJunitThatAnXmlParserReads) {
  int status = 0;
  shell("python3 -c 'import xml.etree.ElementTree' 2>/dev/null", &status);
  if (status != 0) GTEST_SKIP() << "python3 with xml.etree is needed to parse the XML (apt-get install python3)";
  const std::string dir = temp_dir();
  auto r = run_gauntlet({"verify", kCorpus + "/bugs/accuracy/layer_norm_eps_outside.json", "--seed", "3", "--gates",
                         "contract,accuracy,gradients", "--junit", dir + "/junit.xml", "--replay-dir", dir + "/replays",
                         "--quiet"});
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  // Read back by Python's XML parser (expat): the document, the counts, and per test case the
  // element its status maps to, with the failure's text.
  const std::string script =
      "import json, sys, xml.etree.ElementTree as ET\n"
      "root = ET.parse(sys.argv[1]).getroot()\n"
      "out = {'root': root.tag, 'attrs': root.attrib, 'suites': []}\n"
      "for s in root.findall('testsuite'):\n"
      "    cases = []\n"
      "    for c in s.findall('testcase'):\n"
      "        kids = [(k.tag, k.get('message'), k.get('type'), k.text) for k in c]\n"
      "        cases.append({'name': c.get('name'), 'classname': c.get('classname'), 'kids': kids})\n"
      "    props = {p.get('name'): p.get('value') for p in s.find('properties')}\n"
      "    out['suites'].append({'attrs': s.attrib, 'cases': cases, 'props': props})\n"
      "print(json.dumps(out))\n";
  write_file(dir + "/parse.py", script);
  const std::string parsed = shell("python3 '" + dir + "/parse.py' '" + dir + "/junit.xml'", &status);
  ASSERT_EQ(status, 0) << "not well-formed XML:\n" << read_file(dir + "/junit.xml");
  const auto j = nlohmann::json::parse(parsed);
  EXPECT_EQ(j["root"], "testsuites");
  EXPECT_EQ(j["attrs"]["tests"], "3");
  EXPECT_EQ(j["attrs"]["failures"], "1");
  EXPECT_EQ(j["attrs"]["errors"], "0");
  ASSERT_EQ(j["suites"].size(), 1u);
  const auto& suite = j["suites"][0];
  EXPECT_EQ(suite["props"]["seed"], "3");
  EXPECT_EQ(suite["props"]["verdict"], "fail");
  ASSERT_EQ(suite["cases"].size(), 3u);
  EXPECT_EQ(suite["cases"][0]["name"], "contract");
  EXPECT_EQ(suite["cases"][0]["classname"], "layer_norm.layer_norm_eps_outside");
  // A passing gate: no failure, its message (what was checked) as system-out.
  ASSERT_EQ(suite["cases"][0]["kids"].size(), 1u);
  EXPECT_EQ(suite["cases"][0]["kids"][0][0], "system-out");
  EXPECT_NE(suite["cases"][0]["kids"][0][3].get<std::string>().find("cases"), std::string::npos);
  const auto& failure = suite["cases"][1]["kids"][0];
  EXPECT_EQ(failure[0], "failure");
  EXPECT_EQ(failure[2], "wrong-result");
  const std::string body = failure[3];
  const size_t at = body.find("replay: gauntlet replay ");
  ASSERT_NE(at, std::string::npos) << body;
  const std::string replay_file = body.substr(at + 24);
  EXPECT_EQ(access(replay_file.c_str(), R_OK), 0) << "the command names the replay file written: " << replay_file;
  EXPECT_EQ(suite["cases"][2]["kids"][0][0], "skipped") << "gradients: no backward entry";
  expect_valid_junit(dir + "/junit.xml");
}

TEST(Junit, TheSchemaRejectsWhatCiReadersWouldNot) {
  // docs/junit.xsd must be able to fail: a testcase without its time, or with two outcomes.
  if (shell("command -v xmllint 2>/dev/null").empty()) GTEST_SKIP() << "xmllint not installed (apt-get install libxml2-utils)";
  const std::string dir = temp_dir();
  const std::string head = "<?xml version=\"1.0\"?><testsuites tests=\"1\" failures=\"1\" errors=\"0\" skipped=\"0\" "
                           "time=\"0.1\"><testsuite name=\"k\" tests=\"1\" failures=\"1\" errors=\"0\" skipped=\"0\" "
                           "time=\"0.1\">";
  const std::string tail = "</testsuite></testsuites>\n";
  const std::vector<std::pair<std::string, bool>> docs = {
      {"<testcase classname=\"c\" name=\"g\" time=\"0.1\"><failure message=\"m\" type=\"wrong-result\">b</failure></testcase>", true},
      {"<testcase classname=\"c\" name=\"g\"><failure message=\"m\" type=\"wrong-result\">b</failure></testcase>", false},
      {"<testcase classname=\"c\" name=\"g\" time=\"0.1\"><failure message=\"m\" type=\"t\"/><error message=\"m\" "
       "type=\"t\"/></testcase>", false},
      {"<testcase classname=\"c\" name=\"g\" time=\"-1\"/>", false},
  };
  for (size_t i = 0; i < docs.size(); ++i) {
    const std::string path = dir + "/doc" + std::to_string(i) + ".xml";
    std::ofstream(path) << head << docs[i].first << tail;
    int status = 0;
    shell("xmllint --noout --schema '" GAUNTLET_SOURCE_DIR "/docs/junit.xsd' '" + path + "' 2>&1", &status);
    EXPECT_EQ(status == 0, docs[i].second) << docs[i].first;
  }
}

TEST(Junit, UnwritableJunitPathIsOneLineAndExitTwo) {
  auto r = run_gauntlet({"verify", kCorpus + "/controls/relu.json", "--gates", "contract", "--junit",
                         "/nonexistent-dir/junit.xml", "--quiet"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(r.err, "gauntlet: error: cannot write /nonexistent-dir/junit.xml\n");
}

TEST(Report, PlotsAreDrawnInHeadlessChromium) {
  const std::string chromium = find_chromium();
  if (chromium.empty())
    GTEST_SKIP() << "no Chromium to render the page (apt-get install chromium, or set GAUNTLET_CHROMIUM)";
  const std::string dir = temp_dir();
  auto r = run_gauntlet({"report", kRecords, "-o", dir + "/report.html"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("5 kernels (1 pass, 1 fail, 2 error)"), std::string::npos) << r.out;
  const std::string dom = rendered_dom(chromium, dir + "/report.html", dir);
  ASSERT_NE(dom.find("<body"), std::string::npos) << "Chromium printed no DOM";
  EXPECT_NE(dom.find("data-plots-drawn=\"5\""), std::string::npos) << "the script ran to its end";
  // Each plot's bars, as the script drew them: the gates' stacked segments (27 non-zero status
  // counts over 13 gates), four categories, five ops, and the two timed dtypes in each histogram.
  const std::map<std::string, int> bars = {{"gates", 27}, {"categories", 4}, {"ops", 5}, {"speedup", 2}, {"utilization", 2}};
  for (const auto& [kind, n] : bars) {
    const std::string svg = plot_element(dom, kind);
    ASSERT_FALSE(svg.empty()) << kind;
    EXPECT_NE(svg.find("data-drawn=\"" + std::to_string(n) + "\""), std::string::npos) << kind << ": " << svg.substr(0, 300);
    EXPECT_EQ(matches(svg, "<rect [^>]*class=\"bar[ \"]([^\"]*)").size(), size_t(n)) << kind;
  }
  // The histogram bars hold what the summary counted: speedups 0.8 and 1.5 in bins 5 and 6.
  EXPECT_EQ(matches(plot_element(dom, "speedup"), "data-bin=\"([0-9]+)\""), (std::vector<std::string>{"5", "6"}));
  // Bar counts add up: 13 gates x the kernels that ran each.
  int total = 0;
  for (const std::string& c : matches(plot_element(dom, "gates"), "data-count=\"([0-9]+)\"")) total += std::stoi(c);
  EXPECT_EQ(total, 4 + 4 + 6 * 3 + 3 + 3 * 3 + 3);
  // The hostile message stayed text: its script did not run, its image was not created.
  const std::string body_tag = dom.substr(dom.find("<body"), dom.find('>', dom.find("<body")) - dom.find("<body"));
  EXPECT_EQ(body_tag.find("data-pwned"), std::string::npos) << body_tag;
  EXPECT_EQ(dom.find("<img"), std::string::npos);
  EXPECT_NE(dom.find("5 of 5 kernels shown"), std::string::npos) << "the table filter ran";
}

TEST(Report, BadInputIsOneLineAndExitTwo) {
  const std::string dir = temp_dir();
  write_file(dir + "/notes.txt", "not a report\n");
  write_file(dir + "/other.json", "{\"a\": 1}\n");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"report", dir + "/missing.db"}, dir + "/missing.db: cannot read"},
      {{"report", dir + "/notes.txt"}, dir + "/notes.txt: neither a gauntlet results database nor a JSON report"},
      {{"report", dir + "/other.json"}, dir + "/other.json: a JSON report is an array of per-kernel records"},
      {{"report", kRecords, "-o", dir + "/no/such/dir/r.html"}, "cannot write " + dir + "/no/such/dir/r.html"},
  };
  for (const auto& [args, expected] : cases) {
    auto r = run_gauntlet(args);
    EXPECT_EQ(r.exit_code, 2) << args[1];
    EXPECT_EQ(r.err.rfind("gauntlet: error: " + expected, 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

TEST(Report, JunitAndJsonFromTheSameRecords) {
  const std::string dir = temp_dir();
  auto r = run_gauntlet({"report", kRecords, "--junit", dir + "/r.xml", "--json", dir + "/r.json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("report:"), std::string::npos) << "no HTML unless asked when only --junit/--json: " << r.out;
  EXPECT_NE(r.out.find("junit: " + dir + "/r.xml: 5 kernels"), std::string::npos) << r.out;
  const auto records = nlohmann::json::parse(read_file(dir + "/r.json"));
  EXPECT_EQ(records, nlohmann::json::parse(read_file(kRecords)));
  const std::string xml = read_file(dir + "/r.xml");
  EXPECT_NE(xml.find("<testsuites name=\"gauntlet\" tests=\"42\" failures=\"1\" errors=\"14\" skipped=\"2\""),
            std::string::npos)
      << xml.substr(0, 300);
  expect_valid_junit(dir + "/r.xml");
}

TEST(Report, UnsafeKernelsCountApartInEveryOutput) {
  // An unsafe kernel (layouts wrong only on a layout it does not declare) beside a failing one.
  const std::string dir = temp_dir();
  using nlohmann::json;
  const json unsafe_gates = json::array(
      {{{"name", "contract"}, {"status", "pass"}, {"scope", "in-contract"}, {"seconds", 0.1}},
       {{"name", "layouts"}, {"status", "fail"}, {"category", "wrong-result"}, {"scope", "out-of-contract"},
        {"message", "transposed x: y[0,1]: 2 vs 3"}, {"seconds", 0.2}}});
  const json failing_gates = json::array({{{"name", "contract"}, {"status", "fail"}, {"category", "wrong-result"},
                                           {"scope", "in-contract"}, {"message", "wrote its input"}, {"seconds", 0.1}}});
  const json records = json::array(
      {{{"verdict", "unsafe"}, {"op", "softmax"}, {"source", "k/softmax_rows.cpp"}, {"kernel_hash", "dd01"},
        {"gates", unsafe_gates}},
       {{"verdict", "fail"}, {"op", "relu"}, {"source", "k/relu_bad.cpp"}, {"kernel_hash", "ee02"},
        {"gates", failing_gates}}});
  write_file(dir + "/records.json", records.dump());
  auto r = run_gauntlet({"report", dir + "/records.json", "-o", dir + "/r.html", "--junit", dir + "/r.xml"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("2 kernels (0 pass, 1 fail, 0 error, 1 unsafe)"), std::string::npos) << r.out;
  const std::string html = read_file(dir + "/r.html");
  EXPECT_NE(html.find("<span class=\"verdict unsafe\">unsafe</span>"), std::string::npos);
  EXPECT_NE(html.find("<option value=\"unsafe\">unsafe</option>"), std::string::npos);
  const std::string xml = read_file(dir + "/r.xml");
  EXPECT_NE(xml.find("<failure message=\"[out-of-contract] transposed x: y[0,1]: 2 vs 3\" type=\"wrong-result\">"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<failure message=\"wrote its input\""), std::string::npos) << "in-contract: untagged";
  EXPECT_NE(xml.find("<testsuites name=\"gauntlet\" tests=\"3\" failures=\"2\" errors=\"0\""), std::string::npos) << xml;
  expect_valid_junit(dir + "/r.xml");

  const std::string chromium = find_chromium();
  if (chromium.empty()) GTEST_SKIP() << "no Chromium to render the page (apt-get install chromium)";
  // The script stacks the unsafe kernel in its own colour in the ops plot.
  const std::string ops = plot_element(rendered_dom(chromium, dir + "/r.html", dir), "ops");
  EXPECT_EQ(matches(ops, "<rect [^>]*class=\"bar (unsafe)\"").size(), 1u) << ops;
  EXPECT_NE(ops.find("data-drawn=\"2\""), std::string::npos) << ops;
}

TEST(Report, FromAnAuditDatabase) {
  const std::string dir = temp_dir();
  // Two kernels: a correct relu and one that writes into its input (fails contract).
  shell("mkdir -p '" + dir + "/corpus' && cp '" + kCorpus + "/controls/relu.json' '" + kCorpus + "/controls/relu.cpp' '" +
        kCorpus + "/bugs/contract/relu_inplace.json' '" + kCorpus + "/bugs/contract/relu_inplace.cpp' '" + dir +
        "/corpus/'");
  auto audit = run_gauntlet({"audit", dir + "/corpus", "--db", dir + "/audit.db", "--gates", "contract,accuracy",
                             "--replay-dir", dir + "/replays", "--jobs", "2"});
  ASSERT_EQ(audit.exit_code, 1) << audit.out << audit.err;
  auto r = run_gauntlet({"report", dir + "/audit.db", "-o", dir + "/report.html", "--junit", dir + "/audit.xml", "--json",
                         dir + "/audit.json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("2 kernels (1 pass, 1 fail, 0 error)"), std::string::npos) << r.out;
  const auto records = nlohmann::json::parse(read_file(dir + "/audit.json"));
  ASSERT_EQ(records.size(), 2u);
  std::string replay;
  for (const auto& k : records) {
    ASSERT_EQ(k["gates"].size(), 2u);
    if (k["verdict"] == "fail") replay = k["gates"][0]["replay"];
  }
  ASSERT_FALSE(replay.empty()) << records.dump(1);
  const std::string xml = read_file(dir + "/audit.xml");
  EXPECT_NE(xml.find("<testsuites name=\"gauntlet\" tests=\"4\" failures="), std::string::npos) << xml.substr(0, 300);
  EXPECT_NE(xml.find("replay: gauntlet replay " + replay), std::string::npos);
  expect_valid_junit(dir + "/audit.xml");
  const std::string html = read_file(dir + "/report.html");
  EXPECT_NE(html.find("<code class=\"replay\">gauntlet replay " + replay + "</code>"), std::string::npos);

  const std::string chromium = find_chromium();
  if (chromium.empty()) GTEST_SKIP() << "no Chromium to render the page (apt-get install chromium)";
  const std::string dom = rendered_dom(chromium, dir + "/report.html", dir);
  EXPECT_NE(dom.find("data-plots-drawn=\"5\""), std::string::npos);
  int total = 0;
  for (const std::string& c : matches(plot_element(dom, "gates"), "data-count=\"([0-9]+)\"")) total += std::stoi(c);
  EXPECT_EQ(total, 4) << "two gates of two kernels";
  // Without the timing gate there is nothing to histogram: drawn empty, with the reason.
  EXPECT_NE(plot_element(dom, "speedup").find("data-drawn=\"0\""), std::string::npos);
  EXPECT_NE(plot_element(dom, "speedup").find("no timed kernels"), std::string::npos);
}

// Issue 20's ops in the report's per-op view: an audit of a database-style filter (a planted bug
// that keeps NaN), unique and hash_join (integer keys), topk (ties) and the int8 quantizer, each
// under its own op with its verdicts, and in the op filter's data.
TEST(Report, DatabaseAndQuantizedOpsHaveTheirOwnRowsPerOp) {
  const std::string dir = temp_dir();
  std::string copy = "mkdir -p '" + dir + "/corpus'";
  for (const char* k : {"controls/unique", "controls/hash_join", "controls/topk", "controls/quantize_per_tensor",
                        "bugs/special-values/filter_nan_kept"})
    copy += " && cp '" + kCorpus + "/" + k + ".json' '" + kCorpus + "/" + k + ".cpp' '" + dir + "/corpus/'";
  shell(copy);
  auto audit = run_gauntlet({"audit", dir + "/corpus", "--db", dir + "/audit.db", "--gates", "contract,special-values",
                             "--replay-dir", dir + "/replays", "--jobs", "2"});
  ASSERT_EQ(audit.exit_code, 1) << audit.out << audit.err;
  auto r = run_gauntlet({"report", dir + "/audit.db", "-o", dir + "/report.html"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string html = read_file(dir + "/report.html");
  const std::string open_tag = "<script type=\"application/json\" id=\"gauntlet-summary\">";
  const size_t at = html.find(open_tag);
  ASSERT_NE(at, std::string::npos);
  const size_t from = at + open_tag.size();
  const auto summary = nlohmann::json::parse(html.substr(from, html.find("</script>", from) - from));
  std::map<std::string, std::pair<int, int>> per_op;  // op: kernels, pass
  for (const auto& op : summary.at("ops")) per_op[op.at("name")] = {op.at("kernels").get<int>(), op.at("pass").get<int>()};
  EXPECT_EQ(per_op["filter"], std::make_pair(1, 0)) << summary.dump(1);
  for (const char* op : {"unique", "hash_join", "topk", "quantize_per_tensor"})
    EXPECT_EQ(per_op[op], std::make_pair(1, 1)) << op << ": " << summary.dump(1);
  for (const char* op : {"filter", "unique", "hash_join", "topk", "quantize_per_tensor"})
    EXPECT_NE(html.find(std::string("data-op=\"") + op + "\""), std::string::npos) << op;
}
