// End to end: gauntlet audit and merge on copies of corpus kernels — resume after kill -9, bad
// entries recorded, shards merged equal to one run, --json records as verify --json writes them.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <set>
#include <thread>
#include <tuple>

#include <nlohmann/json.hpp>

#include "../test_files.h"
#include "e2e_util.h"

using namespace gauntlet::e2e;

namespace {

const std::string kCorpus = GAUNTLET_SOURCE_DIR "/corpus";
// Gates whose messages are deterministic and which need no extra builds (memory builds an ASan
// copy, timing measures): enough to exercise every path of the audit, in seconds.
const std::string kGates = "contract,accuracy,special-values,shapes,layouts,statelessness";
constexpr int kGateCount = 6;

struct TempDir {
  std::string path = temp_dir();
  ~TempDir() { gauntlet::testing::remove_tree(path); }
};

// Copies corpus kernels (manifest and source) into dir, keeping their names.
void copy_kernels(const std::string& dir, const std::vector<std::string>& manifests) {
  for (const std::string& m : manifests) {
    const std::string name = m.substr(m.rfind('/') + 1);
    write_file(dir + "/" + name, read_file(kCorpus + "/" + m));
    const std::string src = name.substr(0, name.size() - 5) + ".cpp";
    write_file(dir + "/" + src, read_file(kCorpus + "/" + m.substr(0, m.rfind('/') + 1) + src));
  }
}

using Row = std::tuple<std::string, std::string, std::string, std::string, std::string>;

// (entry, gate, status, category, message) of every stored gate; *seconds: each one's seconds.
std::multiset<Row> gate_rows(const std::string& db, std::map<std::pair<std::string, std::string>, double>* seconds = nullptr) {
  std::multiset<Row> rows;
  sqlite3* h = nullptr;
  if (sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) return rows;
  sqlite3_stmt* st = nullptr;
  const char* sql =
      "SELECT k.entry, g.gate, g.status, g.category, g.message, g.seconds FROM gates g JOIN kernels k"
      " USING (kernel_hash, manifest_hash, tool_version, seed)";
  if (sqlite3_prepare_v2(h, sql, -1, &st, nullptr) == SQLITE_OK) {
    auto col = [&](int i) { return std::string(reinterpret_cast<const char*>(sqlite3_column_text(st, i))); };
    while (sqlite3_step(st) == SQLITE_ROW) {
      rows.insert({col(0), col(1), col(2), col(3), col(4)});
      if (seconds) (*seconds)[{col(0), col(1)}] = sqlite3_column_double(st, 5);
    }
  }
  sqlite3_finalize(st);
  sqlite3_close(h);
  return rows;
}

}  // namespace

TEST(Audit, KilledMidRunResumesToTheSameResultsAsAnUninterruptedRun) {
  TempDir t;
  const std::string corpus = t.path + "/corpus";
  mkdir(corpus.c_str(), 0755);
  copy_kernels(corpus, {"controls/relu.json", "controls/softmax.json", "controls/sum.json",
                        "bugs/accuracy/softmax_drop_small.json", "hostile/segfault.json"});
  const std::vector<std::string> common = {"audit", corpus, "--gates", kGates, "--seed", "5", "--replay-dir", t.path + "/replays"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = common;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };

  // Kill -9 once a few gates are stored and before the last kernel completes.
  const std::string db = t.path + "/resumed.db";
  pid_t pid = spawn_gauntlet(with({"--db", db, "--jobs", "2", "--progress-every", "1"}), t.path + "/killed.log");
  const auto t0 = std::chrono::steady_clock::now();
  int stored = 0;
  while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(300)) {
    stored = db_scalar(db, "SELECT count(*) FROM gates");
    if (stored >= 4) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(pid, SIGKILL);
  kill(-pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the audit finished before it could be killed: " << read_file(t.path + "/killed.log");
  std::map<std::pair<std::string, std::string>, double> seconds_before, seconds_after;
  const std::multiset<Row> before = gate_rows(db, &seconds_before);
  ASSERT_GE(before.size(), 4u);
  ASSERT_LT(before.size(), size_t(5 * kGateCount)) << "killed too late to test resuming";

  auto resumed = run_gauntlet(with({"--db", db, "--jobs", "2", "--json", t.path + "/resumed.json"}));
  ASSERT_EQ(resumed.exit_code, 1) << resumed.out << resumed.err;  // the planted bug and the segfault
  // Uninterrupted, one gate at a time: verdicts depend on neither the kill nor --jobs.
  auto straight = run_gauntlet(with({"--db", t.path + "/straight.db", "--jobs", "1"}));
  ASSERT_EQ(straight.exit_code, 1) << straight.out << straight.err;

  const std::multiset<Row> after = gate_rows(db, &seconds_after), reference = gate_rows(t.path + "/straight.db");
  EXPECT_EQ(reference.size(), size_t(5 * kGateCount));
  EXPECT_EQ(after, reference);
  EXPECT_EQ(std::set<Row>(after.begin(), after.end()).size(), after.size()) << "duplicated gate rows";
  EXPECT_EQ(db_scalar(db, "SELECT count(*) FROM kernels"), 5);
  EXPECT_EQ(db_scalar(db, "SELECT count(*) FROM kernels WHERE report IS NULL"), 0);
  // Gates finished before the kill were not run again: their rows, measured seconds included, are
  // exactly as they were (a rerun would have stored its own time).
  for (const Row& r : before) EXPECT_EQ(after.count(r), 1u) << std::get<0>(r) << " " << std::get<1>(r);
  for (const auto& [gate, secs] : seconds_before) EXPECT_EQ(seconds_after[gate], secs) << gate.first << " " << gate.second;

  auto records = nlohmann::json::parse(read_file(t.path + "/resumed.json"));
  ASSERT_EQ(records.size(), 5u);
  std::map<std::string, std::string> verdicts;
  for (const auto& r : records) verdicts[r["entry"]] = r["verdict"];
  EXPECT_EQ(verdicts["relu.json"], "pass");
  EXPECT_EQ(verdicts["softmax_drop_small.json"], "fail");
  EXPECT_EQ(verdicts["segfault.json"], "error");
  // The summary table and, without a terminal, plain progress lines.
  EXPECT_NE(resumed.out.find("verdicts: pass 3, fail 1, error 1"), std::string::npos) << resumed.out;
  EXPECT_NE(resumed.out.find("crash"), std::string::npos) << resumed.out;
  EXPECT_NE(resumed.err.find("audit: "), std::string::npos) << resumed.err;
  EXPECT_NE(resumed.err.find(" gates, failing so far: "), std::string::npos) << resumed.err;
}

TEST(Audit, BadEntriesAreRecordedAndTheAuditGoesOn) {
  TempDir t;
  const std::string corpus = t.path + "/corpus";
  mkdir(corpus.c_str(), 0755);
  copy_kernels(corpus, {"controls/relu.json"});
  write_file(corpus + "/broken.json", "{\"op\": \"relu\", \"source\": ");
  write_file(corpus + "/unknown_op.json", "{\"op\": \"frobnicate\", \"source\": \"relu.cpp\"}");
  write_file(corpus + "/not_a_module.py", "print('hello')\n");
  symlink("/nonexistent/kernel.json", (corpus + "/dangling.json").c_str());
  const std::string db = t.path + "/a.db";
  auto r = run_gauntlet({"audit", corpus, "--db", db, "--gates", "contract", "--json", t.path + "/a.json"});
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  auto records = nlohmann::json::parse(read_file(t.path + "/a.json"));
  ASSERT_EQ(records.size(), 5u) << records.dump(1);
  std::map<std::string, nlohmann::json> by;
  for (const auto& rec : records) by[rec["entry"]] = rec;
  EXPECT_EQ(by["relu.json"]["verdict"], "pass");
  for (const char* bad : {"broken.json", "unknown_op.json", "not_a_module.py", "dangling.json"}) {
    EXPECT_EQ(by[bad]["verdict"], "error") << bad;
    EXPECT_FALSE(by[bad].value("entry_error", "").empty()) << bad;
  }
  EXPECT_NE(by["unknown_op.json"]["entry_error"].get<std::string>().find("frobnicate"), std::string::npos);
  EXPECT_NE(r.out.find("4 not verifiable"), std::string::npos) << r.out;
  // A rerun finds everything recorded: nothing is verified again, nothing is added.
  auto again = run_gauntlet({"audit", corpus, "--db", db, "--gates", "contract"});
  EXPECT_EQ(again.exit_code, 1) << again.err;
  EXPECT_NE(again.out.find("5 kernels were already complete"), std::string::npos) << again.out;
  EXPECT_EQ(db_scalar(db, "SELECT count(*) FROM kernels"), 5);
  EXPECT_EQ(db_scalar(db, "SELECT count(*) FROM gates"), 1);
}

// A gate stored as harness-error is gauntlet's failure, not a verdict: resuming the audit runs it
// again (here a stored pass is rewritten as a harness error, as a build race or a reply too large
// for the wire left them), and the kernel's other stored gates are kept.
TEST(Audit, AResumedAuditRunsAGateStoredAsHarnessErrorAgain) {
  TempDir t;
  const std::string corpus = t.path + "/corpus";
  mkdir(corpus.c_str(), 0755);
  copy_kernels(corpus, {"controls/relu.json"});
  const std::string db = t.path + "/a.db";
  const std::vector<std::string> args = {"audit", corpus, "--db", db, "--gates", "contract,accuracy"};
  auto first = run_gauntlet(args);
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(h,
                         "UPDATE gates SET status='harness-error', category='harness-error', message='planted'"
                         " WHERE gate='accuracy'; UPDATE gates SET message='kept' WHERE gate='contract'",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(h);
  auto again = run_gauntlet(args);
  EXPECT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_NE(again.out.find("1 gates an earlier run left as harness-error were run again"), std::string::npos) << again.out;
  EXPECT_EQ(again.out.find("already complete"), std::string::npos) << again.out;
  std::map<std::string, std::pair<std::string, std::string>> by_gate;
  for (const Row& r : gate_rows(db)) by_gate[std::get<1>(r)] = {std::get<2>(r), std::get<4>(r)};
  EXPECT_EQ(by_gate["accuracy"].first, "pass");
  EXPECT_NE(by_gate["accuracy"].second, "planted");
  EXPECT_EQ(by_gate["contract"].second, "kept");  // not run again
}

TEST(Audit, ShardsMergedEqualOneRunAndJsonMatchesVerify) {
  TempDir t;
  const std::string corpus = t.path + "/corpus";
  mkdir(corpus.c_str(), 0755);
  copy_kernels(corpus, {"controls/relu.json", "controls/sum.json", "controls/clamp.json", "bugs/accuracy/softmax_drop_small.json"});
  const std::vector<std::string> gates = {"--gates", "contract,accuracy", "--seed", "9", "--replay-dir", t.path + "/replays"};
  auto run = [&](std::vector<std::string> a) {
    a.insert(a.begin(), {"audit", corpus});
    a.insert(a.end(), gates.begin(), gates.end());
    return run_gauntlet(a);
  };
  auto s0 = run({"--db", t.path + "/s0.db", "--shard", "0/2"});
  auto s1 = run({"--db", t.path + "/s1.db", "--shard", "1/2"});
  ASSERT_NE(s0.exit_code, 2) << s0.err;
  ASSERT_NE(s1.exit_code, 2) << s1.err;
  const int n0 = db_scalar(t.path + "/s0.db", "SELECT count(*) FROM kernels"), n1 = db_scalar(t.path + "/s1.db", "SELECT count(*) FROM kernels");
  EXPECT_EQ(n0 + n1, 4);
  auto m = run_gauntlet({"merge", t.path + "/s0.db", t.path + "/s1.db", "-o", t.path + "/all.db"});
  ASSERT_EQ(m.exit_code, 0) << m.err;
  EXPECT_NE(m.out.find("4 kernels (4 complete)"), std::string::npos) << m.out;
  auto single = run({"--db", t.path + "/single.db", "--json", t.path + "/single.json"});
  ASSERT_EQ(single.exit_code, 1) << single.err;
  EXPECT_EQ(gate_rows(t.path + "/all.db"), gate_rows(t.path + "/single.db"));
  EXPECT_EQ(gate_rows(t.path + "/all.db").size(), 8u);

  // Each --json record is what verify --json writes for that kernel (same seed, same gates).
  auto records = nlohmann::json::parse(read_file(t.path + "/single.json"));
  ASSERT_EQ(records.size(), 4u);
  for (const auto& rec : records) {
    if (rec["entry"] != "softmax_drop_small.json") continue;
    auto v = run_gauntlet({"verify", corpus + "/softmax_drop_small.json", "--json", t.path + "/v.json", "--quiet",
                           "--gates", "contract,accuracy", "--seed", "9", "--replay-dir", t.path + "/replays"});
    ASSERT_EQ(v.exit_code, 1) << v.err;
    auto j = nlohmann::json::parse(read_file(t.path + "/v.json"));
    for (const char* field : {"verdict", "op", "kernel_hash", "schema_hash", "seed"}) EXPECT_EQ(rec[field], j[field]) << field;
    ASSERT_EQ(rec["gates"].size(), j["gates"].size());
    for (size_t i = 0; i < j["gates"].size(); ++i)
      for (const char* field : {"name", "status", "category", "message", "replay"})
        EXPECT_EQ(rec["gates"][i][field], j["gates"][i][field]) << field;
    EXPECT_TRUE(rec.contains("environment"));
    EXPECT_TRUE(rec.contains("build"));
  }
}

TEST(Audit, BadUsageIsOneLineAndExitTwo) {
  TempDir t;
  auto bad_shard = run_gauntlet({"audit", kCorpus + "/controls/relu.json", "--shard", "2/2", "--db", t.path + "/a.db"});
  EXPECT_EQ(bad_shard.exit_code, 2);
  EXPECT_NE(bad_shard.err.find("--shard"), std::string::npos) << bad_shard.err;
  auto missing = run_gauntlet({"audit", t.path + "/nope", "--db", t.path + "/a.db"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("nope"), std::string::npos) << missing.err;
  write_file(t.path + "/notes.db", "important notes, not a database................................................\n");
  auto not_db = run_gauntlet({"audit", kCorpus + "/controls/relu.json", "--db", t.path + "/notes.db", "--gates", "contract"});
  EXPECT_EQ(not_db.exit_code, 2);
  EXPECT_NE(not_db.err.find("not a gauntlet results database"), std::string::npos) << not_db.err;
  EXPECT_EQ(read_file(t.path + "/notes.db").substr(0, 15), "important notes");
  auto bad_merge = run_gauntlet({"merge", t.path + "/notes.db", "-o", t.path + "/out.db"});
  EXPECT_EQ(bad_merge.exit_code, 2);
  EXPECT_NE(bad_merge.err.find("notes.db"), std::string::npos) << bad_merge.err;
  for (const auto* r : {&bad_shard, &missing, &not_db, &bad_merge}) {
    std::string e = r->err;
    while (!e.empty() && e.back() == '\n') e.pop_back();
    EXPECT_EQ(e.find('\n'), std::string::npos) << "one line: " << r->err;
  }
}

// A lane that runs out of kernels takes gates of the kernel another lane is still verifying (work
// stealing, audit_lane.cpp): the hanging kernel's timeouts, which RapidCheck would otherwise run
// one after another in its own lane, spread over both. The stored verdicts are the same as one
// lane's, gate for gate, and none is stored twice.
TEST(Audit, IdleLanesTakeGatesOfAKernelStillVerifying) {
  TempDir t;
  const std::string corpus = t.path + "/corpus";
  mkdir(corpus.c_str(), 0755);
  copy_kernels(corpus, {"controls/relu.json", "controls/softmax.json", "hostile/infinite_loop.json"});
  auto run = [&](const std::string& db, const std::string& jobs) {
    return run_gauntlet({"audit", corpus, "--gates", kGates, "--seed", "5", "--timeout", "2", "--db", db, "--jobs",
                         jobs, "--replay-dir", t.path + "/replays"});
  };
  auto two = run(t.path + "/two.db", "2");
  ASSERT_EQ(two.exit_code, 1) << two.out << two.err;  // the hanging kernel's errors
  auto one = run(t.path + "/one.db", "1");
  ASSERT_EQ(one.exit_code, 1) << one.out << one.err;
  const std::string taken = "gates run by lanes that had run out of kernels";
  EXPECT_NE(two.out.find(taken), std::string::npos) << two.out;
  EXPECT_EQ(one.out.find(taken), std::string::npos) << one.out;  // one lane: nobody to take from
  const std::multiset<Row> stolen = gate_rows(t.path + "/two.db"), straight = gate_rows(t.path + "/one.db");
  EXPECT_EQ(straight.size(), size_t(3 * kGateCount));
  EXPECT_EQ(stolen, straight);
  EXPECT_EQ(std::set<Row>(stolen.begin(), stolen.end()).size(), stolen.size()) << "duplicated gate rows";
  EXPECT_EQ(db_scalar(t.path + "/two.db", "SELECT count(*) FROM kernels WHERE report IS NULL"), 0);
}
