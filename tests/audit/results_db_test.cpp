// Tests of the audit's results database: gate and kernel rows round trip, reruns never duplicate,
// foreign files are refused, read_kernel_reports' records, and merging shards.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <fstream>

#include "../test_files.h"
#include "gauntlet/audit/results_db.h"
#include "gauntlet/run/verify.h"

using namespace gauntlet;

namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char name[] = "/tmp/gauntlet-db-XXXXXX";
    path = mkdtemp(name);
  }
  ~TempDir() { gauntlet::testing::remove_tree(path); }
};

GateVerdict verdict(const std::string& gate, Status s, Category c, const std::string& msg) {
  GateVerdict v;
  v.name = gate;
  v.status = s;
  v.category = c;
  v.message = msg;
  v.cases = 7;
  v.seconds = 0.25;
  if (s == Status::Fail) {
    v.replay = "gauntlet-out/replays/softmax-abc-" + gate + ".json";
    v.outputs_sha256 = "0123abcd";
    v.evidence = {{"max_ulp", 12}, {"case", {{"shape", {3, 5}}}}};
  }
  return v;
}

KernelKey key(const std::string& h, uint64_t seed = 1) { return {h, "m" + h, "0.1.0", seed}; }

int count_rows(const std::string& db, const std::string& table) {
  sqlite3* h = nullptr;
  sqlite3_open(db.c_str(), &h);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(h, ("SELECT count(*) FROM " + table).c_str(), -1, &st, nullptr);
  int n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
  sqlite3_finalize(st);
  sqlite3_close(h);
  return n;
}

}  // namespace

TEST(GateJson, RoundTripsEveryField) {
  GateVerdict v = verdict("accuracy", Status::Fail, Category::WrongResult, "max error 3 ulp > 2 ulp at [1, 4]");
  std::string error;
  auto back = gate_from_json(gate_to_json(v), &error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(back->name, v.name);
  EXPECT_EQ(back->status, v.status);
  EXPECT_EQ(back->category, v.category);
  EXPECT_EQ(back->message, v.message);
  EXPECT_EQ(back->replay, v.replay);
  EXPECT_EQ(back->outputs_sha256, v.outputs_sha256);
  EXPECT_EQ(back->cases, v.cases);
  EXPECT_DOUBLE_EQ(back->seconds, v.seconds);
  EXPECT_EQ(back->evidence, v.evidence);
}

TEST(GateJson, RefusesUnknownStatusAndCategory) {
  std::string error;
  nlohmann::json g = gate_to_json(verdict("memory", Status::Pass, Category::None, ""));
  g["status"] = "maybe";
  EXPECT_FALSE(gate_from_json(g, &error));
  EXPECT_NE(error.find("status"), std::string::npos) << error;
  g["status"] = "error";
  g["category"] = "cosmic-ray";
  EXPECT_FALSE(gate_from_json(g, &error));
  EXPECT_NE(error.find("category"), std::string::npos) << error;
  EXPECT_FALSE(gate_from_json(nlohmann::json::array(), &error));
}

TEST(ResultsDb, GatesRoundTripAndReinsertingDoesNotDuplicate) {
  TempDir t;
  const std::string path = t.path + "/a.db";
  std::string error;
  auto db = ResultsDb::open(path, &error);
  ASSERT_TRUE(db) << error;
  const KernelKey k = key("aa", 0xFFFFFFFFFFFFFFF1ull);  // a seed above INT64_MAX survives
  std::vector<GateVerdict> vs = {verdict("contract", Status::Pass, Category::None, ""),
                                 verdict("accuracy", Status::Fail, Category::WrongResult, "3 ulp"),
                                 verdict("memory", Status::Error, Category::Crash, "SIGSEGV"),
                                 verdict("gradients", Status::Skip, Category::None, "skip: no backward")};
  // The scope decides unsafe from fail: a resumed audit reads stored gates back (it once lost it,
  // and an out-of-contract layouts failure became an in-contract one).
  vs[1].scope = "out-of-contract";
  vs[0].scope = "in-contract";
  for (int round = 0; round < 2; ++round)
    for (const GateVerdict& v : vs) ASSERT_TRUE(db->put_gate(k, v, &error)) << error;
  EXPECT_EQ(count_rows(path, "gates"), 4);
  auto stored = db->gates(k, &error);
  ASSERT_EQ(stored.size(), 4u) << error;
  EXPECT_EQ(stored["accuracy"].status, Status::Fail);
  EXPECT_EQ(stored["accuracy"].evidence, vs[1].evidence);
  EXPECT_EQ(stored["accuracy"].replay, vs[1].replay);
  EXPECT_EQ(stored["accuracy"].scope, "out-of-contract");
  EXPECT_EQ(stored["contract"].scope, "in-contract");
  EXPECT_EQ(stored["memory"].scope, "");
  EXPECT_EQ(stored["memory"].category, Category::Crash);
  EXPECT_EQ(stored["gradients"].message, "skip: no backward");
  EXPECT_TRUE(db->gates(key("aa", 2), &error).empty());  // another seed is another audit
}

TEST(ResultsDb, KernelRecordsAndReports) {
  TempDir t;
  const std::string path = t.path + "/a.db";
  std::string error;
  {
    auto db = ResultsDb::open(path, &error);
    ASSERT_TRUE(db) << error;
    // b: incomplete (two gates stored, out of order); a: complete; c: not a kernel.
    ASSERT_TRUE(db->put_kernel(key("b"), {"b/k.json", "relu", "cpu", "", nullptr, ""}, &error)) << error;
    ASSERT_TRUE(db->put_gate(key("b"), verdict("memory", Status::Pass, Category::None, ""), &error));
    ASSERT_TRUE(db->put_gate(key("b"), verdict("contract", Status::Pass, Category::None, ""), &error));
    nlohmann::json report = {{"verdict", "fail"}, {"op", "softmax"}, {"kernel_hash", "a"}, {"seed", 1},
                             {"gates", {gate_to_json(verdict("accuracy", Status::Fail, Category::WrongResult, "x"))}}};
    ASSERT_TRUE(db->put_kernel(key("a"), {"a/k.json", "softmax", "cpu", "", nullptr, ""}, &error));
    ASSERT_TRUE(db->put_kernel(key("a"), {"a/k.json", "softmax", "cpu", "fail", report, ""}, &error));
    // An incomplete write after a complete one keeps the report.
    ASSERT_TRUE(db->put_kernel(key("a"), {"a/k.json", "softmax", "cpu", "", nullptr, ""}, &error));
    ASSERT_TRUE(db->put_kernel(key("c", 3), {"c.json", "", "", "error", nullptr, "c.json: malformed JSON"}, &error));
    auto a = db->kernel(key("a"), &error);
    ASSERT_TRUE(a);
    EXPECT_EQ(a->verdict, "fail");
    EXPECT_EQ(a->report, report);
    EXPECT_FALSE(db->kernel(key("zz"), &error));
  }
  EXPECT_EQ(count_rows(path, "kernels"), 3);
  auto records = read_kernel_reports(path, &error);
  ASSERT_EQ(records.size(), 3u) << error;
  EXPECT_EQ(records[0]["entry"], "a/k.json");
  EXPECT_EQ(records[0]["verdict"], "fail");
  EXPECT_EQ(records[0]["complete"], true);
  EXPECT_EQ(records[0]["gates"][0]["name"], "accuracy");
  EXPECT_EQ(records[0]["tool_version"], "0.1.0");
  EXPECT_EQ(records[0]["manifest_hash"], "ma");
  EXPECT_EQ(records[1]["entry"], "b/k.json");
  EXPECT_EQ(records[1]["verdict"], "incomplete");
  EXPECT_EQ(records[1]["complete"], false);
  ASSERT_EQ(records[1]["gates"].size(), 2u);
  EXPECT_EQ(records[1]["gates"][0]["name"], "contract");  // in the gates' order
  EXPECT_EQ(records[1]["gates"][1]["name"], "memory");
  EXPECT_EQ(records[2]["verdict"], "error");
  EXPECT_EQ(records[2]["entry_error"], "c.json: malformed JSON");
  EXPECT_EQ(records[2]["seed"], 3);
  EXPECT_TRUE(records[2]["gates"].empty());
}

TEST(ResultsDb, RefusesFilesThatAreNotResultsDatabases) {
  TempDir t;
  std::string error;
  std::ofstream(t.path + "/text.db") << "this is not SQLite, just some text long enough to have a header...........";
  EXPECT_FALSE(ResultsDb::open(t.path + "/text.db", &error));
  EXPECT_NE(error.find("not a gauntlet results database"), std::string::npos) << error;
  sqlite3* h = nullptr;
  sqlite3_open((t.path + "/other.db").c_str(), &h);
  sqlite3_exec(h, "CREATE TABLE users(name TEXT)", nullptr, nullptr, nullptr);
  sqlite3_close(h);
  error.clear();
  EXPECT_FALSE(ResultsDb::open(t.path + "/other.db", &error));
  EXPECT_NE(error.find("other tables"), std::string::npos) << error;
  // Reading never creates a database.
  error.clear();
  EXPECT_TRUE(read_kernel_reports(t.path + "/missing.db", &error).empty());
  EXPECT_FALSE(error.empty());
  EXPECT_NE(access((t.path + "/missing.db").c_str(), F_OK), 0);
}

TEST(ResultsDb, MergeUnionsShardsAndCompletesIncompleteKernels) {
  TempDir t;
  std::string error;
  const nlohmann::json report = {{"verdict", "pass"}, {"gates", nlohmann::json::array()}};
  {
    auto a = ResultsDb::open(t.path + "/a.db", &error);
    auto b = ResultsDb::open(t.path + "/b.db", &error);
    ASSERT_TRUE(a && b) << error;
    ASSERT_TRUE(a->put_kernel(key("k1"), {"k1.json", "relu", "cpu", "pass", report, ""}, &error));
    ASSERT_TRUE(a->put_gate(key("k1"), verdict("contract", Status::Pass, Category::None, ""), &error));
    // k2: begun in a (one gate), finished in b.
    ASSERT_TRUE(a->put_kernel(key("k2"), {"k2.json", "sum", "cpu", "", nullptr, ""}, &error));
    ASSERT_TRUE(a->put_gate(key("k2"), verdict("contract", Status::Pass, Category::None, ""), &error));
    ASSERT_TRUE(b->put_kernel(key("k2"), {"k2.json", "sum", "cpu", "pass", report, ""}, &error));
    ASSERT_TRUE(b->put_gate(key("k2"), verdict("contract", Status::Pass, Category::None, ""), &error));
    ASSERT_TRUE(b->put_gate(key("k2"), verdict("accuracy", Status::Pass, Category::None, ""), &error));
    ASSERT_TRUE(b->put_kernel(key("k3"), {"k3.json", "", "", "error", nullptr, "broken"}, &error));
  }
  const std::string out = t.path + "/all.db";
  ASSERT_TRUE(merge_databases({t.path + "/a.db", t.path + "/b.db"}, out, &error)) << error;
  ASSERT_TRUE(merge_databases({t.path + "/b.db", t.path + "/a.db"}, out, &error)) << error;  // again: no change
  EXPECT_EQ(count_rows(out, "kernels"), 3);
  EXPECT_EQ(count_rows(out, "gates"), 3);
  auto records = read_kernel_reports(out, &error);
  ASSERT_EQ(records.size(), 3u) << error;
  for (const auto& r : records) EXPECT_TRUE(r["complete"].get<bool>()) << r.dump();
  EXPECT_EQ(records[1]["verdict"], "pass");

  EXPECT_FALSE(merge_databases({out}, out, &error));
  std::ofstream(t.path + "/junk.db") << "not a database at all, not even close, really not.............";
  error.clear();
  EXPECT_FALSE(merge_databases({t.path + "/junk.db"}, out, &error));
  EXPECT_NE(error.find("junk.db"), std::string::npos) << error;
  error.clear();
  EXPECT_FALSE(merge_databases({t.path + "/nope.db"}, out, &error));
  EXPECT_NE(error.find("nope.db"), std::string::npos) << error;
  EXPECT_EQ(count_rows(out, "kernels"), 3);  // what was merged before stays
}

TEST(ManifestHash, DiffersByContractNotByPath) {
  KernelManifest a;
  a.op = "softmax";
  a.source = "/x/softmax.cpp";
  a.dtypes = {DType::Float32};
  KernelManifest b = a;
  b.source = "/y/other.cpp";
  EXPECT_EQ(manifest_hash(a), manifest_hash(b));
  b.dtypes = {DType::Float16};
  EXPECT_NE(manifest_hash(a), manifest_hash(b));
  b = a;
  b.attrs["dim"] = int64_t(-1);
  EXPECT_NE(manifest_hash(a), manifest_hash(b));
}

// A database written before the entry_info column (a JSONL line's name, line and fields) still
// opens: read-only it reads without the column, read-write it gains the column, and merging it
// into a new database keeps its rows.
// A write into a damaged page says the file is damaged (a rerun would fail the same way), and
// check_intact finds the damage before any write.
TEST(ResultsDb, AWriteIntoADamagedPageSaysTheDatabaseIsDamaged) {
  TempDir t;
  const std::string path = t.path + "/damaged.db";
  std::string error;
  {
    auto db = ResultsDb::open(path, &error);
    ASSERT_TRUE(db) << error;
    EXPECT_TRUE(db->check_intact(&error)) << error;
    for (int i = 0; i < 200; ++i)
      ASSERT_TRUE(db->put_kernel({"k" + std::to_string(i), "m", "0.1.0", 1},
                                 {"e" + std::to_string(i) + std::string(1500, 'x'), "relu", "cpu", "pass", nullptr, ""}, &error))
          << error;
  }
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const size_t row = bytes.find("e100x");
  ASSERT_NE(row, std::string::npos);
  std::fill(bytes.begin() + row / 4096 * 4096, bytes.begin() + row / 4096 * 4096 + 4096, '\x55');
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  auto db = ResultsDb::open(path, &error);
  ASSERT_TRUE(db) << error;
  EXPECT_FALSE(db->check_intact(&error));
  EXPECT_NE(error.find("the database is damaged"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  error.clear();
  EXPECT_FALSE(db->put_kernel({"k100", "m", "0.1.0", 1}, {"e100", "relu", "cpu", "fail", nullptr, ""}, &error));
  EXPECT_NE(error.find("storing kernel e100"), std::string::npos) << error;
  EXPECT_NE(error.find("the database is damaged"), std::string::npos) << error;
}

TEST(ResultsDb, ADatabaseFromBeforeEntryInfoStillOpens) {
  TempDir t;
  const std::string old_db = t.path + "/old.db";
  {
    sqlite3* h = nullptr;
    ASSERT_EQ(sqlite3_open(old_db.c_str(), &h), SQLITE_OK);
    const char* sql =
        "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "INSERT INTO meta VALUES('format','gauntlet-results'),('schema_version','1');"
        "CREATE TABLE kernels(kernel_hash TEXT NOT NULL, manifest_hash TEXT NOT NULL, tool_version TEXT NOT NULL,"
        " seed TEXT NOT NULL, entry TEXT NOT NULL, op TEXT NOT NULL DEFAULT '', device TEXT NOT NULL DEFAULT '',"
        " verdict TEXT, report TEXT, entry_error TEXT,"
        " updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),"
        " PRIMARY KEY (kernel_hash, manifest_hash, tool_version, seed));"
        "CREATE TABLE gates(kernel_hash TEXT NOT NULL, manifest_hash TEXT NOT NULL, tool_version TEXT NOT NULL,"
        " seed TEXT NOT NULL, gate TEXT NOT NULL, status TEXT NOT NULL, category TEXT NOT NULL, message TEXT NOT NULL,"
        " replay TEXT, seconds REAL, cases INTEGER, outputs_sha256 TEXT, evidence TEXT,"
        " PRIMARY KEY (kernel_hash, manifest_hash, tool_version, seed, gate));"
        "INSERT INTO kernels(kernel_hash, manifest_hash, tool_version, seed, entry, verdict, entry_error)"
        " VALUES('c', 'mc', '0.1.0', '1', 'c.json', 'error', 'c.json: malformed JSON');";
    ASSERT_EQ(sqlite3_exec(h, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(h);
    sqlite3_close(h);
  }
  std::string error;
  auto records = read_kernel_reports(old_db, &error);
  ASSERT_EQ(records.size(), 1u) << error;
  EXPECT_EQ(records[0]["entry_error"], "c.json: malformed JSON");
  EXPECT_FALSE(records[0].contains("entry_name"));
  EXPECT_EQ(record_label(records[0]), "c.json");

  const std::string merged = t.path + "/merged.db";
  ASSERT_TRUE(merge_databases({old_db}, merged, &error)) << error;
  EXPECT_EQ(read_kernel_reports(merged, &error).size(), 1u) << error;

  auto db = ResultsDb::open(old_db, &error);
  ASSERT_TRUE(db) << error;
  KernelRecord rec{"pairs.jsonl:3", "", "", "error", nullptr, "pairs.jsonl:3: no class ModelNew",
                   {{"name", "19_ReLU"}, {"line", 3}, {"fields", {{"model", "m-7b"}, {"tag", "r2"}}}}};
  ASSERT_TRUE(db->put_kernel(key("d"), rec, &error)) << error;
  EXPECT_EQ(db->kernel(key("d"), &error)->info, rec.info);
  // Its gates table gains the scope column.
  GateVerdict outside = verdict("layouts", Status::Fail, Category::WrongResult, "x");
  outside.scope = "out-of-contract";
  ASSERT_TRUE(db->put_gate(key("d"), outside, &error)) << error;
  EXPECT_EQ(db->gates(key("d"), &error)["layouts"].scope, "out-of-contract") << error;
  // A later write without info (a rerun's in-progress row) keeps it.
  rec.info = nullptr;
  ASSERT_TRUE(db->put_kernel(key("d"), rec, &error)) << error;
  db.reset();
  records = read_kernel_reports(old_db, &error);
  ASSERT_EQ(records.size(), 2u) << error;
  EXPECT_EQ(records[1]["entry_name"], "19_ReLU");
  EXPECT_EQ(records[1]["entry_line"], 3);
  EXPECT_EQ(records[1]["entry_fields"], nlohmann::json({{"model", "m-7b"}, {"tag", "r2"}}));
  EXPECT_EQ(record_label(records[1]), "pairs.jsonl:3 (19_ReLU)");
}

// The standard check's verdict (standard_check.h) is stored the moment it is known, survives the
// kernel's later writes, is read back with the record, and a merge keeps it whichever input has it.
TEST(ResultsDb, StandardCheckIsKeptThroughKernelWritesAndMerges) {
  TempDir t;
  std::string error;
  const nlohmann::json check = {{"verdict", "accept"}, {"reason", "5 trials"}, {"check", "kbcheck"}, {"seconds", 0.5}};
  const nlohmann::json report = {{"verdict", "fail"}, {"op", "relu"}, {"kernel_hash", "a"}, {"seed", 1},
                                 {"gates", nlohmann::json::array()}};
  const std::string with = t.path + "/with.db", without = t.path + "/without.db", merged = t.path + "/merged.db";
  {
    auto db = ResultsDb::open(with, &error);
    ASSERT_TRUE(db) << error;
    ASSERT_TRUE(db->put_kernel(key("a"), {"a.json", "relu", "cpu", "", nullptr, ""}, &error)) << error;
    ASSERT_TRUE(db->put_standard_check(key("a"), check, &error)) << error;
    ASSERT_TRUE(db->put_kernel(key("a"), {"a.json", "relu", "cpu", "fail", report, ""}, &error)) << error;
    EXPECT_EQ(db->kernel(key("a"), &error)->standard_check, check) << "the kernel's record did not overwrite it";
    EXPECT_TRUE(db->kernel(key("a"), &error)->report.is_object());
  }
  auto records = read_kernel_reports(with, &error);
  ASSERT_EQ(records.size(), 1u) << error;
  EXPECT_EQ(records[0]["standard_check"], check);
  {
    // The same kernel complete without a check (an audit run with --no-standard-check).
    auto db = ResultsDb::open(without, &error);
    ASSERT_TRUE(db) << error;
    ASSERT_TRUE(db->put_kernel(key("a"), {"a.json", "relu", "cpu", "fail", report, ""}, &error)) << error;
    EXPECT_TRUE(db->kernel(key("a"), &error)->standard_check.is_null());
    EXPECT_FALSE(read_kernel_reports(without, &error)[0].contains("standard_check"));
  }
  // Merged into a row that lacks it, or from an input that lacks it: either way it is kept.
  ASSERT_TRUE(merge_databases({without, with}, merged, &error)) << error;
  EXPECT_EQ(read_kernel_reports(merged, &error)[0]["standard_check"], check) << error;
  ASSERT_TRUE(merge_databases({without}, merged, &error)) << error;
  EXPECT_EQ(read_kernel_reports(merged, &error)[0]["standard_check"], check) << error;
  const std::string other = t.path + "/other.db";
  ASSERT_TRUE(merge_databases({with, without}, other, &error)) << error;
  EXPECT_EQ(read_kernel_reports(other, &error)[0]["standard_check"], check) << error;
}
