// The audit's SQLite results database: schema, per-gate and per-kernel rows, reading and merging.
#include "gauntlet/audit/results_db.h"

#include <sys/stat.h>

#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>

#include "gauntlet/build/builder.h"
#include "gauntlet/run/verify.h"

namespace gauntlet {
namespace {

// Bumped when a table changes; a database of another version is refused, not misread.
constexpr const char* kSchemaVersion = "1";

// The key columns, in the order every statement binds them (seed as decimal text: it is unsigned
// 64-bit, which SQLite's INTEGER is not).
constexpr const char* kKeyColumns = "kernel_hash, manifest_hash, tool_version, seed";

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS kernels(
  kernel_hash TEXT NOT NULL, manifest_hash TEXT NOT NULL, tool_version TEXT NOT NULL, seed TEXT NOT NULL,
  entry TEXT NOT NULL, op TEXT NOT NULL DEFAULT '', device TEXT NOT NULL DEFAULT '',
  verdict TEXT, report TEXT, entry_error TEXT, entry_info TEXT,
  updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  PRIMARY KEY (kernel_hash, manifest_hash, tool_version, seed));
CREATE TABLE IF NOT EXISTS gates(
  kernel_hash TEXT NOT NULL, manifest_hash TEXT NOT NULL, tool_version TEXT NOT NULL, seed TEXT NOT NULL,
  gate TEXT NOT NULL, status TEXT NOT NULL, category TEXT NOT NULL, message TEXT NOT NULL,
  replay TEXT, seconds REAL, cases INTEGER, outputs_sha256 TEXT, evidence TEXT, scope TEXT,
  PRIMARY KEY (kernel_hash, manifest_hash, tool_version, seed, gate));
)sql";

// A prepared statement that finalizes itself.
struct Stmt {
  sqlite3_stmt* s = nullptr;
  Stmt(sqlite3* db, const std::string& sql, std::string* error) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) *error = sqlite3_errmsg(db);
  }
  ~Stmt() { sqlite3_finalize(s); }
  void text(int i, const std::string& v) { sqlite3_bind_text(s, i, v.c_str(), int(v.size()), SQLITE_TRANSIENT); }
  void text_or_null(int i, const std::string& v) { v.empty() ? (void)sqlite3_bind_null(s, i) : text(i, v); }
  void key(const KernelKey& k) {
    text(1, k.kernel_hash);
    text(2, k.manifest_hash);
    text(3, k.tool_version);
    text(4, std::to_string(k.seed));
  }
  std::string col(int i) const {
    const unsigned char* t = sqlite3_column_text(s, i);
    return t ? reinterpret_cast<const char*>(t) : "";
  }
};

nlohmann::json parse_or_null(const std::string& text) {
  return text.empty() ? nlohmann::json() : nlohmann::json::parse(text, nullptr, false);
}

// Serializes every use of a connection: audit lanes store gates from several threads.
std::mutex& db_mutex() {
  static std::mutex mu;
  return mu;
}

// Whether `schema`.kernels has `column` (entry_info came after schema version 1's first tables).
bool has_column(sqlite3* db, const std::string& schema, const std::string& column,
                const std::string& table = "kernels") {
  std::string e;
  Stmt st(db, "PRAGMA " + schema + ".table_info(" + table + ")", &e);
  if (!e.empty()) return false;
  while (sqlite3_step(st.s) == SQLITE_ROW)
    if (st.col(1) == column) return true;
  return false;
}

nlohmann::json info_or_null(const std::string& text) {
  const nlohmann::json j = parse_or_null(text);
  return j.is_object() ? j : nlohmann::json();
}

// Why a scan of `table` stopped before its end (SQLITE_CORRUPT, an I/O error): one line.
std::string damaged(const std::string& path, const std::string& table, sqlite3* db) {
  return path + ": cannot read its " + table + " (" + sqlite3_errmsg(db) +
         "): the database is damaged; sqlite3's .recover may save its rows";
}

// Why a write failed: sqlite's message, and when the file itself is damaged, that said plainly
// (a rerun would fail the same way; the rows written before are still in it).
std::string write_failed(const std::string& path, const std::string& what, sqlite3* db) {
  const int code = sqlite3_errcode(db);
  std::string msg = path + ": " + what + ": " + sqlite3_errmsg(db);
  if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB) msg += ": the database is damaged; sqlite3's .recover may save its rows";
  return msg;
}

int gate_rank(const std::string& name) {
  static const std::vector<std::string> order = gate_names();
  auto it = std::find(order.begin(), order.end(), name);
  return int(it - order.begin());
}

}  // namespace

std::unique_ptr<ResultsDb> ResultsDb::open(const std::string& path, std::string* error) { return open_impl(path, false, error); }

std::unique_ptr<ResultsDb> ResultsDb::open_read_only(const std::string& path, std::string* error) {
  // Never creates the file: a missing database is an error here, not an empty result.
  if (access(path.c_str(), R_OK) != 0) return (*error = "cannot read " + path + ": no such readable file", nullptr);
  return open_impl(path, true, error);
}

std::unique_ptr<ResultsDb> ResultsDb::open_impl(const std::string& path, bool read_only, std::string* error) {
  sqlite3* db = nullptr;
  const int flags = (read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_FULLMUTEX;
  if (sqlite3_open_v2(path.c_str(), &db, flags, nullptr) != SQLITE_OK) {
    *error = "cannot open results database " + path + ": " + (db ? sqlite3_errmsg(db) : "out of memory");
    sqlite3_close(db);
    return nullptr;
  }
  std::unique_ptr<ResultsDb> r(new ResultsDb(db, path));
  sqlite3_busy_timeout(db, 30000);  // shards may share one file; wait for the other writer
  std::string e;
  // Not a gauntlet database: some other SQLite file (tables but no meta), or not SQLite at all.
  {
    Stmt q(db, "SELECT count(*) FROM sqlite_master WHERE type='table'", &e);
    if (!e.empty() || sqlite3_step(q.s) != SQLITE_ROW)
      return (*error = path + ": not a gauntlet results database (" + (e.empty() ? sqlite3_errmsg(db) : e) + ")", nullptr);
    if (sqlite3_column_int(q.s, 0) > 0) {
      Stmt m(db, "SELECT value FROM meta WHERE key='format'", &e);
      if (!e.empty() || sqlite3_step(m.s) != SQLITE_ROW || m.col(0) != "gauntlet-results")
        return (*error = path + ": not a gauntlet results database (an SQLite file with other tables)", nullptr);
      Stmt v(db, "SELECT value FROM meta WHERE key='schema_version'", &e);
      if (!e.empty() || sqlite3_step(v.s) != SQLITE_ROW || v.col(0) != kSchemaVersion)
        return (*error = path + ": results database schema version '" + v.col(0) + "', this gauntlet reads " + kSchemaVersion, nullptr);
    } else if (read_only) {
      return (*error = path + ": not a gauntlet results database (no tables)", nullptr);
    }
  }
  r->has_entry_info_ = has_column(db, "main", "entry_info");
  r->has_standard_check_ = has_column(db, "main", "standard_check");
  r->has_gate_scope_ = has_column(db, "main", "scope", "gates");
  if (read_only) return r;
  // WAL: a writer never blocks readers (the report can read a running audit), and with
  // synchronous=NORMAL each commit survives the process being killed (not a power loss).
  if (!r->exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", &e) || !r->exec(kSchema, &e) ||
      !r->exec(std::string("INSERT OR IGNORE INTO meta VALUES('format','gauntlet-results'),('schema_version','") +
                   kSchemaVersion + "');",
               &e))
    return (*error = path + ": " + e, nullptr);
  // A column added compatibly: a database written before it gains it (null for its old rows).
  for (const char* column : {"entry_info", "standard_check"})
    if (!has_column(db, "main", column) &&
        !r->exec(std::string("ALTER TABLE kernels ADD COLUMN ") + column + " TEXT;", &e))
      return (*error = path + ": " + e, nullptr);
  // A gate's scope decides unsafe from fail: without it a resumed audit read every stored
  // out-of-contract failure back as in-contract (a database from before it: null, as in-contract).
  if (!has_column(db, "main", "scope", "gates") && !r->exec("ALTER TABLE gates ADD COLUMN scope TEXT;", &e))
    return (*error = path + ": " + e, nullptr);
  r->has_entry_info_ = r->has_standard_check_ = r->has_gate_scope_ = true;
  return r;
}

ResultsDb::~ResultsDb() { sqlite3_close(db_); }

bool ResultsDb::check_intact(std::string* error) {
  std::lock_guard<std::mutex> lock(db_mutex());
  std::string e;
  Stmt q(db_, "PRAGMA quick_check(1)", &e);
  const int rc = e.empty() ? sqlite3_step(q.s) : SQLITE_ERROR;
  const std::string verdict = rc == SQLITE_ROW ? q.col(0) : (e.empty() ? sqlite3_errmsg(db_) : e);
  if (verdict == "ok") return true;
  // sqlite's report is several lines ("*** in database main ***\nPage 4: ..."): made one.
  std::string why = verdict;
  if (size_t at = why.find("*** in database main ***"); at != std::string::npos) why.erase(at, 24);
  for (char& ch : why) if (ch == '\n') ch = ' ';
  why.erase(0, why.find_first_not_of(' '));
  *error = path_ + ": the database is damaged (" + why + "); sqlite3's .recover may save its rows";
  return false;
}

bool ResultsDb::exec(const std::string& sql, std::string* error) {
  char* msg = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &msg) == SQLITE_OK) return true;
  *error = msg ? msg : sqlite3_errmsg(db_);
  sqlite3_free(msg);
  return false;
}

bool ResultsDb::put_gate(const KernelKey& key, const GateVerdict& v, std::string* error) {
  std::lock_guard<std::mutex> lock(db_mutex());
  std::string e;
  // REPLACE: a gate is only stored again when its stored record could not be read back.
  Stmt st(db_, std::string("INSERT OR REPLACE INTO gates(") + kKeyColumns +
                   ", gate, status, category, message, replay, seconds, cases, outputs_sha256, evidence, scope)"
                   " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
          &e);
  if (!e.empty()) return (*error = path_ + ": " + e, false);
  st.key(key);
  st.text(5, v.name);
  st.text(6, status_name(v.status));
  st.text(7, category_name(v.category));
  st.text(8, v.message);
  st.text_or_null(9, v.replay);
  sqlite3_bind_double(st.s, 10, v.seconds);
  sqlite3_bind_int(st.s, 11, v.cases);
  st.text_or_null(12, v.outputs_sha256);
  st.text_or_null(13, v.evidence.empty() ? "" : v.evidence.dump());
  st.text_or_null(14, v.scope);
  if (sqlite3_step(st.s) != SQLITE_DONE) return (*error = write_failed(path_, "storing gate " + v.name, db_), false);
  return true;
}

bool ResultsDb::put_kernel(const KernelKey& key, const KernelRecord& rec, std::string* error) {
  std::lock_guard<std::mutex> lock(db_mutex());
  std::string e;
  // A complete record is never replaced by an incomplete one (COALESCE keeps the report).
  Stmt st(db_, std::string("INSERT INTO kernels(") + kKeyColumns +
                   ", entry, op, device, verdict, report, entry_error, entry_info) VALUES(?,?,?,?,?,?,?,?,?,?,?)"
                   " ON CONFLICT DO UPDATE SET entry=excluded.entry, op=excluded.op, device=excluded.device,"
                   " verdict=COALESCE(excluded.verdict, kernels.verdict), report=COALESCE(excluded.report, kernels.report),"
                   " entry_error=excluded.entry_error, entry_info=COALESCE(excluded.entry_info, kernels.entry_info),"
                   " updated_at=excluded.updated_at",
          &e);
  if (!e.empty()) return (*error = path_ + ": " + e, false);
  st.key(key);
  st.text(5, rec.entry);
  st.text(6, rec.op);
  st.text(7, rec.device);
  st.text_or_null(8, rec.verdict);
  st.text_or_null(9, rec.report.is_null() ? "" : rec.report.dump());
  st.text_or_null(10, rec.entry_error);
  st.text_or_null(11, rec.info.is_object() ? rec.info.dump() : "");
  if (sqlite3_step(st.s) != SQLITE_DONE) return (*error = write_failed(path_, "storing kernel " + rec.entry, db_), false);
  return true;
}

bool ResultsDb::put_standard_check(const KernelKey& key, const nlohmann::json& check, std::string* error) {
  std::lock_guard<std::mutex> lock(db_mutex());
  std::string e;
  Stmt st(db_, std::string("UPDATE kernels SET standard_check=?5 WHERE (") + kKeyColumns + ") = (?1,?2,?3,?4)", &e);
  if (!e.empty()) return (*error = path_ + ": " + e, false);
  st.key(key);
  st.text(5, check.dump());
  if (sqlite3_step(st.s) != SQLITE_DONE) return (*error = write_failed(path_, "storing a standard check", db_), false);
  return true;
}

std::map<std::string, GateVerdict> ResultsDb::gates(const KernelKey& key, std::string* error) {
  std::lock_guard<std::mutex> lock(db_mutex());
  std::map<std::string, GateVerdict> out;
  std::string e;
  Stmt st(db_, std::string("SELECT gate, status, category, message, replay, seconds, cases, outputs_sha256, evidence, ") +
                   (has_gate_scope_ ? "scope" : "NULL") + " FROM gates WHERE (" + kKeyColumns + ") = (?,?,?,?)",
          &e);
  if (!e.empty()) return (*error = path_ + ": " + e, out);
  st.key(key);
  int rc;
  while ((rc = sqlite3_step(st.s)) == SQLITE_ROW) {
    nlohmann::json g = {{"name", st.col(0)}, {"status", st.col(1)}, {"category", st.col(2)}, {"message", st.col(3)},
                        {"replay", st.col(4)}, {"seconds", sqlite3_column_double(st.s, 5)},
                        {"cases", sqlite3_column_int(st.s, 6)}, {"outputs_sha256", st.col(7)}};
    const nlohmann::json ev = parse_or_null(st.col(8));
    if (ev.is_object()) g["evidence"] = ev;
    if (!st.col(9).empty()) g["scope"] = st.col(9);
    // A record that does not read back is left out: that gate runs again and replaces it.
    if (auto v = gate_from_json(g, &e)) out[v->name] = *v;
  }
  if (rc != SQLITE_DONE) *error = damaged(path_, "gates", db_);
  return out;
}

std::optional<KernelRecord> ResultsDb::kernel(const KernelKey& key, std::string* error) {
  std::lock_guard<std::mutex> lock(db_mutex());
  std::string e;
  Stmt st(db_, std::string("SELECT entry, op, device, verdict, report, entry_error, ") + info_column() + ", " +
                   check_column() + " FROM kernels WHERE (" + kKeyColumns + ") = (?,?,?,?)",
          &e);
  if (!e.empty()) return (*error = path_ + ": " + e, std::nullopt);
  st.key(key);
  if (sqlite3_step(st.s) != SQLITE_ROW) return std::nullopt;
  KernelRecord r{st.col(0), st.col(1), st.col(2), st.col(3), parse_or_null(st.col(4)), st.col(5), info_or_null(st.col(6)),
                 info_or_null(st.col(7))};
  // A report that does not read back counts as not stored: the kernel is verified again.
  if (!r.report.is_object() && r.entry_error.empty()) r.report = nullptr, r.verdict.clear();
  return r;
}

nlohmann::json ResultsDb::reports(std::string* error) {
  nlohmann::json out = nlohmann::json::array();
  std::vector<std::pair<KernelKey, KernelRecord>> rows;
  {
    std::lock_guard<std::mutex> lock(db_mutex());
    std::string e;
    Stmt st(db_, std::string("SELECT ") + kKeyColumns + ", entry, op, device, verdict, report, entry_error, " +
                     info_column() + ", " + check_column() + " FROM kernels"
                     " ORDER BY entry, kernel_hash, manifest_hash, tool_version, seed",
            &e);
    if (!e.empty()) return (*error = path_ + ": " + e, out);
    int rc;
    while ((rc = sqlite3_step(st.s)) == SQLITE_ROW) {
      KernelKey k{st.col(0), st.col(1), st.col(2), std::strtoull(st.col(3).c_str(), nullptr, 10)};
      rows.push_back({k, KernelRecord{st.col(4), st.col(5), st.col(6), st.col(7), parse_or_null(st.col(8)), st.col(9),
                                      info_or_null(st.col(10)), info_or_null(st.col(11))}});
    }
    // A damaged page ends the scan early: said, never a short list that looks complete.
    if (rc != SQLITE_DONE) return (*error = damaged(path_, "kernels", db_), out);
  }
  for (auto& [key, rec] : rows) {
    nlohmann::json j;
    if (rec.report.is_object()) {
      j = rec.report;
      j["complete"] = true;
    } else if (!rec.entry_error.empty()) {
      j = {{"verdict", "error"}, {"op", rec.op}, {"source", rec.entry}, {"kernel_hash", key.kernel_hash},
           {"seed", key.seed}, {"gates", nlohmann::json::array()}, {"entry_error", rec.entry_error}, {"complete", true}};
    } else {
      std::vector<GateVerdict> gs;
      for (auto& [name, v] : gates(key, error)) gs.push_back(v);
      std::sort(gs.begin(), gs.end(), [](const GateVerdict& a, const GateVerdict& b) { return gate_rank(a.name) < gate_rank(b.name); });
      nlohmann::json arr = nlohmann::json::array();
      for (const GateVerdict& v : gs) arr.push_back(gate_to_json(v));
      j = {{"verdict", "incomplete"}, {"op", rec.op}, {"source", rec.entry}, {"kernel_hash", key.kernel_hash},
           {"seed", key.seed}, {"gates", arr}, {"complete", false}};
    }
    // The key's own values (a report's are the same; the key is what callers match records by).
    j["kernel_hash"] = key.kernel_hash;
    j["seed"] = key.seed;
    j["entry"] = rec.entry;
    j["device"] = rec.device;
    j["tool_version"] = key.tool_version;
    j["manifest_hash"] = key.manifest_hash;
    if (rec.info.is_object()) {
      if (rec.info.contains("name")) j["entry_name"] = rec.info["name"];
      if (rec.info.contains("line")) j["entry_line"] = rec.info["line"];
      if (rec.info.contains("fields") && rec.info["fields"].is_object() && !rec.info["fields"].empty())
        j["entry_fields"] = rec.info["fields"];
    }
    if (rec.standard_check.is_object()) j["standard_check"] = rec.standard_check;
    out.push_back(j);
  }
  return out;
}

bool ResultsDb::merge_from(const std::string& other, std::string* error) {
  if (access(other.c_str(), R_OK) != 0) return (*error = "cannot read " + other + ": no such readable file", false);
  // Check it is one of ours before attaching (ATTACH accepts any file, even a non-database).
  if (!ResultsDb::open_read_only(other, error)) return false;
  std::lock_guard<std::mutex> lock(db_mutex());
  std::string e;
  {
    Stmt at(db_, "ATTACH DATABASE ? AS src", &e);
    if (!e.empty()) return (*error = path_ + ": " + e, false);
    at.text(1, other);
    if (sqlite3_step(at.s) != SQLITE_DONE) return (*error = other + ": " + sqlite3_errmsg(db_), false);
  }
  const std::string cols = std::string(kKeyColumns);
  const std::string src_info = has_column(db_, "src", "entry_info") ? "entry_info" : "NULL";
  const bool src_checks = has_column(db_, "src", "standard_check");
  const std::string src_scope = has_column(db_, "src", "scope", "gates") ? "scope" : "NULL";
  // A standard check stored in either input is kept: a row that has none takes the other's.
  const std::string take_checks =
      src_checks ? "UPDATE kernels SET standard_check=(SELECT s.standard_check FROM src.kernels s WHERE"
                   " (s.kernel_hash, s.manifest_hash, s.tool_version, s.seed) = (kernels.kernel_hash,"
                   " kernels.manifest_hash, kernels.tool_version, kernels.seed)) WHERE standard_check IS NULL;"
                 : "";
  const std::string sql =
      "BEGIN IMMEDIATE;"
      "INSERT OR IGNORE INTO gates(" + cols + ", gate, status, category, message, replay, seconds, cases, outputs_sha256,"
      " evidence, scope) SELECT " + cols + ", gate, status, category, message, replay, seconds, cases, outputs_sha256,"
      " evidence, " + src_scope + " FROM src.gates;"
      "INSERT INTO kernels(" + cols + ", entry, op, device, verdict, report, entry_error, entry_info, standard_check, updated_at) SELECT " +
      cols + ", entry, op, device, verdict, report, entry_error, " + src_info + ", " + (src_checks ? "standard_check" : "NULL") +
      ", updated_at FROM src.kernels WHERE true"
      " ON CONFLICT DO UPDATE SET entry=excluded.entry, op=excluded.op, device=excluded.device,"
      " verdict=excluded.verdict, report=excluded.report, entry_error=excluded.entry_error,"
      " entry_info=COALESCE(excluded.entry_info, kernels.entry_info), updated_at=excluded.updated_at"
      " WHERE kernels.report IS NULL AND excluded.report IS NOT NULL;" +
      take_checks + "COMMIT;";
  const bool ok = exec(sql, &e);
  if (!ok) {
    std::string ignored;
    exec("ROLLBACK;", &ignored);
    *error = "merging " + other + " into " + path_ + ": " + e;
  }
  std::string ignored;
  exec("DETACH DATABASE src;", &ignored);
  return ok;
}

nlohmann::json read_kernel_reports(const std::string& db_path, std::string* error) {
  auto db = ResultsDb::open_read_only(db_path, error);
  if (!db) return nlohmann::json::array();
  return db->reports(error);
}

bool merge_databases(const std::vector<std::string>& inputs, const std::string& output, std::string* error) {
  // The same file under another name (./a.db, a symlink, a hard link) is the same database:
  // compared by device and inode, not by the path's text.
  struct stat out_st {};
  const bool out_exists = stat(output.c_str(), &out_st) == 0;
  for (const std::string& in : inputs) {
    struct stat in_st {};
    const bool same_file = out_exists && stat(in.c_str(), &in_st) == 0 && in_st.st_dev == out_st.st_dev &&
                           in_st.st_ino == out_st.st_ino;
    if (in == output || same_file)
      return (*error = "merge: the output " + output + " is also an input (" + in + ")", false);
  }
  // Every input read whole before anything is written: a damaged or foreign one fails the merge
  // while the output is still as it was.
  for (const std::string& in : inputs) {
    auto src = ResultsDb::open_read_only(in, error);
    if (!src || !src->check_intact(error)) return false;
    std::string scan_error;
    src->reports(&scan_error);
    if (!scan_error.empty()) return (*error = scan_error, false);
  }
  auto db = ResultsDb::open(output, error);
  bool ok = db && db->check_intact(error);
  for (size_t i = 0; ok && i < inputs.size(); ++i) ok = db->merge_from(inputs[i], error);
  // Each input goes in by one transaction, and merging again is idempotent: an output that existed
  // keeps whole inputs only (rerun to finish); one this merge made is removed, never left partial.
  if (!ok && !out_exists) {
    db.reset();
    for (const char* suffix : {"", "-wal", "-shm"}) unlink((output + suffix).c_str());
  }
  return ok;
}

std::string record_label(const nlohmann::json& r) {
  std::string entry = r.is_object() ? r.value("entry", "") : "";
  if (entry.empty() && r.is_object() && r.contains("source") && r["source"].is_string()) entry = r["source"];
  if (r.is_object() && r.contains("entry_name") && r["entry_name"].is_string() && !r["entry_name"].get<std::string>().empty())
    entry += " (" + r["entry_name"].get<std::string>() + ")";
  return entry;
}

std::string manifest_hash(const KernelManifest& m) {
  nlohmann::json j;
  j["op"] = m.op;
  j["entry"] = m.entry;
  j["backward"] = m.backward_entry;
  j["device"] = m.device;
  j["dtypes"] = manifest_dtypes_json(m);
  nlohmann::json attrs = nlohmann::json::object();
  for (const auto& [k, v] : m.attrs) attrs[k] = attr_to_string(v);
  j["attrs"] = attrs;
  j["shapes"] = manifest_shapes_json(m);
  return sha256_hex(j.dump());
}

}  // namespace gauntlet
