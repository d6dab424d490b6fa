// JUnit XML: counts, one test case per gate, the element per status, the replay command, escaping.
#include "gauntlet/report/junit.h"

#include <gtest/gtest.h>

#include "gauntlet/run/report_text.h"

using gauntlet::junit_xml;
using nlohmann::json;

namespace {

json gate(const std::string& name, const std::string& status, const std::string& category = "",
          const std::string& message = "", const json& replay = nullptr) {
  return {{"name", name}, {"status", status}, {"category", category}, {"message", message}, {"replay", replay},
          {"seconds", 0.25}, {"cases", 3}};
}

json kernel() {
  json k = {{"verdict", "fail"}, {"op", "softmax"}, {"source", "corpus/bugs/softmax.fast.cpp"},
            {"kernel_hash", "ab12"}, {"seed", 7}, {"seconds", 2.5}};
  k["gates"] = {gate("contract", "pass"),
                gate("accuracy", "fail", "wrong-result", "y[0,3]: 1.5 vs 1.25 <tolerance>\nsecond line",
                     "out/replays/softmax-ab12-accuracy.json"),
                gate("determinism", "error", "crash", "SIGSEGV", "out/my replays/d.json"),
                gate("memory", "harness-error", "harness-error", "no worker"),
                gate("gradients", "skip", "", "skip: no backward entry")};
  return k;
}

size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

}  // namespace

TEST(Junit, OneTestCasePerGateWithCountsOnSuiteAndRoot) {
  const std::string xml = junit_xml(kernel(), "host1", "2026-01-02T03:04:05");
  EXPECT_EQ(xml.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"gauntlet\"", 0), 0u) << xml;
  EXPECT_EQ(count(xml, "<testcase "), 5u);
  EXPECT_EQ(count(xml, "<testsuite "), 1u);
  // contract passes, accuracy fails, determinism and memory error, gradients skips.
  const std::string counts = "tests=\"5\" failures=\"1\" errors=\"2\" skipped=\"1\" time=\"2.500\"";
  EXPECT_EQ(count(xml, counts), 2u) << "the same counts on <testsuites> and <testsuite>:\n" << xml;
  EXPECT_NE(xml.find("hostname=\"host1\" timestamp=\"2026-01-02T03:04:05\""), std::string::npos);
  EXPECT_NE(xml.find("<testcase classname=\"softmax.softmax_fast\" name=\"accuracy\" time=\"0.250\">"), std::string::npos)
      << "class name: op, then the file stem without dots";
  EXPECT_NE(xml.find("<property name=\"seed\" value=\"7\"/>"), std::string::npos);
}

TEST(Junit, FailureCarriesTheMessageAndTheReplayCommand) {
  const std::string xml = junit_xml(kernel());
  // The attribute holds the first line; the body all of it and then the command, escaped.
  EXPECT_NE(xml.find("<failure message=\"y[0,3]: 1.5 vs 1.25 &lt;tolerance&gt;\" type=\"wrong-result\">"
                     "y[0,3]: 1.5 vs 1.25 &lt;tolerance&gt;\nsecond line\n\n"
                     "replay: gauntlet replay out/replays/softmax-ab12-accuracy.json</failure>"),
            std::string::npos)
      << xml;
  // A path with a space is quoted so the pasted command runs.
  EXPECT_NE(xml.find("<error message=\"SIGSEGV\" type=\"crash\">SIGSEGV\n\nreplay: gauntlet replay &#39;out/my "
                     "replays/d.json&#39;</error>"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<error message=\"no worker\" type=\"harness-error\">no worker</error>"), std::string::npos);
  EXPECT_NE(xml.find("<skipped message=\"skip: no backward entry\"/>"), std::string::npos);
  EXPECT_NE(xml.find("name=\"contract\" time=\"0.250\"/>"), std::string::npos) << "a pass is an empty test case";
}

TEST(Junit, EscapesMarkupControlBytesAndBadUtf8) {
  json k = kernel();
  k["gates"] = {gate("accuracy", "fail", "wrong-result", std::string("a<b>&\"q\" 'x' \x01\x1b[31m \xff\xfe ok \xc3\xa9"))};
  const std::string xml = junit_xml(k);
  const std::string escaped = "a&lt;b&gt;&amp;&quot;q&quot; &#39;x&#39; \xEF\xBF\xBD\xEF\xBF\xBD[31m \xEF\xBF\xBD\xEF\xBF\xBD ok \xc3\xa9";
  EXPECT_NE(xml.find("message=\"" + escaped + "\""), std::string::npos) << xml;
  for (char c : xml) EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20 && c != '\n') << "raw control byte in the XML";
  // Attribute values keep their line breaks as character references.
  EXPECT_EQ(gauntlet::xml_escape("a\nb\tc", true), "a&#10;b&#9;c");
  EXPECT_EQ(gauntlet::xml_escape("a\nb\tc", false), "a\nb\tc");
  // Overlong encodings and surrogates are not UTF-8.
  EXPECT_EQ(gauntlet::xml_escape("\xc0\xaf|\xed\xa0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD|\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(Junit, BuildFailureAndBrokenEntriesAreErrorsNotEmptySuites) {
  json built = kernel();
  built["verdict"] = "error";
  built["gates"] = {gate("contract", "error", "build-error", "the kernel did not build: g++ exited 1")};
  built["build"] = {{"ok", false}, {"error", "g++ exited 1"}, {"log_head", "k.cpp:3: error: 'x' was not declared"}};
  json broken = {{"entry", "bad/manifest.json"}, {"verdict", "error"}, {"gates", json::array()},
                 {"entry_error", "bad/manifest.json: field 'op': required string"}};
  const std::string xml = junit_xml(json::array({built, broken, 42}));
  EXPECT_EQ(count(xml, "<testsuite "), 2u) << "non-object records are ignored";
  EXPECT_NE(xml.find("<system-err>g++ exited 1\nk.cpp:3: error: &#39;x&#39; was not declared</system-err>"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("name=\"bad/manifest.json\""), std::string::npos);
  EXPECT_NE(xml.find("name=\"entry\""), std::string::npos);
  EXPECT_NE(xml.find("type=\"load-error\">bad/manifest.json: field &#39;op&#39;: required string</error>"),
            std::string::npos);
  EXPECT_NE(xml.find("<testsuites name=\"gauntlet\" tests=\"2\" failures=\"0\" errors=\"2\""), std::string::npos);
}

TEST(Junit, UnknownStatusCountsAsAnError) {
  json k = kernel();
  k["gates"] = {gate("accuracy", "maybe")};
  const std::string xml = junit_xml(k);
  EXPECT_NE(xml.find("errors=\"1\""), std::string::npos);
  EXPECT_NE(xml.find("unknown gate status &#39;maybe&#39;"), std::string::npos);
}

TEST(Junit, ShellQuoting) {
  EXPECT_EQ(gauntlet::shell_quote("gauntlet-out/replays/a-1.json"), "gauntlet-out/replays/a-1.json");
  EXPECT_EQ(gauntlet::shell_quote("it's $HOME"), "'it'\\''s $HOME'");
  EXPECT_EQ(gauntlet::shell_quote(""), "''");
  EXPECT_EQ(gauntlet::replay_command("a b"), "gauntlet replay 'a b'");
}

TEST(Junit, OutOfContractFailuresStayFailuresAndSaySo) {
  json k = kernel();
  k["verdict"] = "unsafe";
  json layouts = gate("layouts", "fail", "wrong-result", "transposed x: y[0,1]: 2 vs 3\nrow 0");
  layouts["scope"] = "out-of-contract";
  json shapes = gate("shapes", "error", "crash", "SIGSEGV");
  shapes["scope"] = "out-of-contract";
  json passing = gate("contract", "pass");
  passing["scope"] = "in-contract+out-of-contract";
  json memory = gate("memory", "harness-error", "harness-error", "no worker");
  memory["scope"] = "out-of-contract";  // gauntlet's fault whatever the case: not the kernel's
  // A record stored before scopes existed: its failure is in-contract.
  k["gates"] = {passing, layouts, shapes, memory, gate("accuracy", "fail", "wrong-result", "y[0]: 1 vs 2")};
  const std::string xml = junit_xml(k);
  EXPECT_NE(xml.find("<failure message=\"[out-of-contract] transposed x: y[0,1]: 2 vs 3\" type=\"wrong-result\">"
                     "[out-of-contract] transposed x: y[0,1]: 2 vs 3\nrow 0</failure>"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<error message=\"[out-of-contract] SIGSEGV\" type=\"crash\">"), std::string::npos) << xml;
  EXPECT_NE(xml.find("<failure message=\"y[0]: 1 vs 2\" type=\"wrong-result\">"), std::string::npos) << xml;
  EXPECT_NE(xml.find("<error message=\"no worker\" type=\"harness-error\">"), std::string::npos) << xml;
  EXPECT_EQ(count(xml, "[out-of-contract]"), 4u) << "two gates, each in its message and its body";
  // Still counted as failures and errors: CI must not show an unsafe kernel green.
  EXPECT_NE(xml.find("tests=\"5\" failures=\"2\" errors=\"2\" skipped=\"0\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<property name=\"verdict\" value=\"unsafe\"/>"), std::string::npos);
}
