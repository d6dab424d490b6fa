// End to end: replay files are self-contained (a native kernel with a sibling include, a JSONL
// module pair with its reference), and an audit names JSONL lines by their name, line and fields.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>

#include <nlohmann/json.hpp>

#include "../test_files.h"
#include "e2e_util.h"

using namespace gauntlet::e2e;

namespace {

const std::string kCorpus = GAUNTLET_SOURCE_DIR "/corpus";

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

}  // namespace

// A planted-bug kernel copied to a temporary folder, its code in a header one folder over
// ("../lib/..."); once the copy is deleted the replay uses the file's embedded sources.
TEST(PortableReplay, NativeKernelReplaysAfterItsSourcesAreDeleted) {
  const std::string dir = temp_dir();
  const std::string src = dir + "/src";
  mkdir(src.c_str(), 0755);
  mkdir((src + "/kernel").c_str(), 0755);
  mkdir((src + "/lib").c_str(), 0755);
  write_file(src + "/lib/softmax_impl.h", read_file(kCorpus + "/bugs/accuracy/softmax_drop_small.cpp"));
  write_file(src + "/kernel/k.cpp", "// the kernel lives in a sibling folder's header\n#include \"../lib/softmax_impl.h\"\n");
  write_file(src + "/kernel/k.json", R"({"op": "softmax", "source": "k.cpp", "dtypes": ["float32"]})");
  auto r = run_gauntlet({"verify", src + "/kernel/k.json", "--seed", "5", "--gates", "accuracy", "--json", dir + "/r.json",
                         "--replay-dir", dir + "/replays", "--quiet"});
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  const nlohmann::json j = nlohmann::json::parse(read_file(dir + "/r.json"));
  const std::string replay = j["gates"][0]["replay"];
  ASSERT_FALSE(replay.empty()) << j.dump(1);
  nlohmann::json rj = nlohmann::json::parse(read_file(replay));
  const std::string recorded = rj["outputs_sha256"];
  ASSERT_EQ(recorded.size(), 64u);
  ASSERT_EQ(rj["sources"]["includes"].size(), 1u) << rj["sources"].dump(1);
  EXPECT_EQ(rj["sources"]["includes"][0]["name"], "../lib/softmax_impl.h");
  EXPECT_EQ(rj["sources"]["manifest"]["dtypes"], nlohmann::json::array({"float32"}));

  auto here = run_gauntlet({"replay", replay});
  EXPECT_EQ(here.exit_code, 1) << here.out << here.err;
  EXPECT_TRUE(contains(here.out, "sources: the recorded paths")) << here.out;
  EXPECT_TRUE(contains(here.out, "reproduced: yes")) << here.out;

  gauntlet::testing::remove_tree(src);
  auto gone = run_gauntlet({"replay", replay});
  EXPECT_EQ(gone.exit_code, 1) << gone.out << gone.err;
  EXPECT_TRUE(contains(gone.out, "sources: the copies embedded in the replay file (" + src + "/kernel/k.cpp is missing)"))
      << gone.out;
  EXPECT_TRUE(contains(gone.out, "outputs sha256: " + recorded + " (recorded " + recorded + "): identical")) << gone.out;
  EXPECT_TRUE(contains(gone.out, "reproduced: yes")) << gone.out;

  // A file without embedded sources (as written before) whose path is gone: one line, exit 2.
  rj.erase("sources");
  write_file(dir + "/old.json", rj.dump());
  auto old = run_gauntlet({"replay", dir + "/old.json"});
  EXPECT_EQ(old.exit_code, 2) << old.out << old.err;
  EXPECT_EQ(first_line(old.err) + "\n", old.err);
  EXPECT_TRUE(contains(old.err, "kernel source " + src + "/kernel/k.cpp is missing; the replay file carries no copy"))
      << old.err;
}

// An audit of a JSONL {"ref", "candidate", "name"} pair (the reference module separate from the
// candidate): with the JSONL and the audit's --work-dir deleted, the failing gate's replay file
// still reproduces the verdict and output digest; the summary names the line by name and line.
TEST(PortableReplay, JsonlModulePairReplaysAfterTheSourcesAndWorkDirAreDeleted) {
  REQUIRE_PYTHON_TORCH();
  const std::string text = read_file(kCorpus + "/modules/rmsnorm_half_sum.py");
  const size_t model = text.find("class Model("), model_new = text.find("class ModelNew("),
               inputs = text.find("def get_inputs");
  ASSERT_TRUE(model < model_new && model_new < inputs && inputs != std::string::npos);
  const std::string head = text.substr(0, model);
  const std::string ref = head + text.substr(model, model_new - model) + text.substr(inputs);
  const std::string cand = head + text.substr(model_new, inputs - model_new);
  const std::string dir = temp_dir();
  mkdir((dir + "/in").c_str(), 0755);
  const nlohmann::json line = {{"ref", ref}, {"candidate", cand}, {"name", "my_rmsnorm"}, {"model", "m-7b"}};
  write_file(dir + "/in/pairs.jsonl", line.dump() + "\n");
  auto r = run_gauntlet({"audit", dir + "/in/pairs.jsonl", "--db", dir + "/a.db", "--json", dir + "/a.json", "--work-dir",
                         dir + "/work", "--gates", "accuracy", "--seed", "1", "--replay-dir", dir + "/replays"});
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  // The summary leads with the root cause (scope, gate, case), then the failing gates.
  EXPECT_TRUE(contains(r.out, "pairs.jsonl:1 (my_rmsnorm): fail: in-contract, accuracy: case ")) << r.out;
  EXPECT_TRUE(contains(r.out, "gates: accuracy fail (wrong-result)")) << r.out;
  const nlohmann::json records = nlohmann::json::parse(read_file(dir + "/a.json"));
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0]["op"], "module");
  EXPECT_EQ(records[0]["entry_fields"], nlohmann::json({{"model", "m-7b"}}));
  const std::string replay = records[0]["gates"][0]["replay"];
  ASSERT_FALSE(replay.empty()) << records.dump(1);
  const nlohmann::json rj = nlohmann::json::parse(read_file(replay));
  ASSERT_TRUE(rj["sources"].contains("reference")) << rj["sources"].dump(1);
  EXPECT_EQ(rj["sources"]["reference"]["text"], ref);
  EXPECT_EQ(rj["sources"]["kernel"]["text"], cand);
  const std::string recorded = rj["outputs_sha256"];

  gauntlet::testing::remove_tree(dir + "/in");
  gauntlet::testing::remove_tree(dir + "/work");
  auto rep = run_gauntlet({"replay", replay});
  EXPECT_EQ(rep.exit_code, 1) << rep.out << rep.err;
  EXPECT_TRUE(contains(rep.out, "sources: the copies embedded in the replay file")) << rep.out;
  EXPECT_TRUE(contains(rep.out, "verdict: fail wrong-result")) << rep.out;
  EXPECT_TRUE(contains(rep.out, "outputs sha256: " + recorded + " (recorded " + recorded + "): identical")) << rep.out;
  EXPECT_TRUE(contains(rep.out, "reproduced: yes")) << rep.out;
}

// JSONL lines keep their names and other fields: the summary says "file:LINE (name)", --json
// records carry entry_name, entry_line and entry_fields, the HTML report has a column per field;
// a line without a name is its file:line. (Lines that are not modules: no Python needed.)
TEST(AuditNames, JsonlLinesAreNamedByNameAndLineAndKeepTheirFields) {
  const std::string dir = temp_dir();
  const nlohmann::json named = {{"name", "19_ReLU"}, {"model", "m-7b"}, {"tag", "r2"}, {"candidate", "import torch\n"}};
  const nlohmann::json unnamed = {{"model", "other"}, {"candidate", "x = 1\n"}};
  write_file(dir + "/pairs.jsonl", named.dump() + "\n" + unnamed.dump() + "\n");
  auto r = run_gauntlet({"audit", dir + "/pairs.jsonl", "--db", dir + "/a.db", "--json", dir + "/a.json", "--work-dir",
                         dir + "/work", "--gates", "contract", "--seed", "1"});
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "pairs.jsonl:1 (19_ReLU): not verifiable: ")) << r.out;
  EXPECT_TRUE(contains(r.out, "pairs.jsonl:2: not verifiable: ")) << r.out;
  const nlohmann::json records = nlohmann::json::parse(read_file(dir + "/a.json"));
  ASSERT_EQ(records.size(), 2u) << records.dump(1);
  EXPECT_EQ(records[0]["entry_name"], "19_ReLU");
  EXPECT_EQ(records[0]["entry_line"], 1);
  EXPECT_EQ(records[0]["entry_fields"], nlohmann::json({{"model", "m-7b"}, {"tag", "r2"}}));
  EXPECT_FALSE(records[1].contains("entry_name")) << records[1].dump(1);
  EXPECT_EQ(records[1]["entry_line"], 2);
  EXPECT_EQ(records[1]["entry_fields"], nlohmann::json({{"model", "other"}}));

  auto rep = run_gauntlet({"report", dir + "/a.db", "-o", dir + "/r.html"});
  ASSERT_EQ(rep.exit_code, 0) << rep.out << rep.err;
  const std::string html = read_file(dir + "/r.html");
  EXPECT_TRUE(contains(html, "<th>kernel</th><th>model</th><th>tag</th><th>op</th>")) << html.substr(0, 4000);
  EXPECT_TRUE(contains(html, "pairs.jsonl:1 (19_ReLU)"));
  EXPECT_TRUE(contains(html, "<td>m-7b</td><td>r2</td>"));
  EXPECT_TRUE(contains(html, "<td>other</td><td><span class=\"none\">\u2014</span></td>"));
}
