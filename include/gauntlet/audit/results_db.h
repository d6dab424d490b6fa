// Audit results in SQLite: one row per (kernel, gate) as it finishes, one per kernel when complete.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gauntlet/cases/gate.h"

struct sqlite3;

namespace gauntlet {

// What identifies one audited kernel. kernel_hash is the SPEC's kernel hash (sha256 of the source
// bytes); manifest_hash tells apart two contracts of one source (dtypes, attrs, shapes, entries);
// a stored result is only reused by the same tool version and master seed.
struct KernelKey {
  std::string kernel_hash;
  std::string manifest_hash;
  std::string tool_version;
  uint64_t seed = 0;
};

// A kernel's row. report is the `verify --json` object once every gate is stored (null before);
// entry_error is set for corpus entries that could not be verified (unreadable, not a kernel,
// broken manifest), which are recorded with verdict "error" and no gates.
struct KernelRecord {
  std::string entry;    // the corpus entry, relative to the audited path
  std::string op, device;
  std::string verdict;  // "pass" | "fail" | "error"; empty while incomplete
  nlohmann::json report;
  std::string entry_error;
  nlohmann::json info;  // CorpusEntry::info (a JSONL line's name, line and other fields), or null
  // The field's standard check (standard_check.h: {"verdict", "reason", "check", "seconds"}), null
  // until it ran. Stored apart from the report (put_standard_check), so put_kernel leaves it be.
  nlohmann::json standard_check;
};

// One results database (WAL mode). Every put_* is its own transaction, committed before it
// returns: a process killed at any moment leaves every finished gate stored, none half-written.
// Re-inserting a stored key is a no-op (gates) or an update (kernels), so reruns never duplicate.
class ResultsDb {
 public:
  // Opens or creates the database and its tables. nullptr with a one-line *error when the file is
  // not a gauntlet results database (or not SQLite at all) or cannot be opened.
  static std::unique_ptr<ResultsDb> open(const std::string& path, std::string* error);
  // For reading (report, merge inputs): never creates or changes the file.
  static std::unique_ptr<ResultsDb> open_read_only(const std::string& path, std::string* error);
  ~ResultsDb();
  ResultsDb(const ResultsDb&) = delete;
  ResultsDb& operator=(const ResultsDb&) = delete;

  // Whether every page reads back as a well-formed database (PRAGMA quick_check): a run checks
  // before it writes, so a damaged file is one clear error up front, not failed writes mid-run.
  bool check_intact(std::string* error);
  bool put_gate(const KernelKey& key, const GateVerdict& v, std::string* error);
  bool put_kernel(const KernelKey& key, const KernelRecord& record, std::string* error);
  // The kernel's standard-check verdict, stored the moment it is known (the kernel's row exists:
  // put_kernel wrote it when the kernel started), kept through resumes and merges.
  bool put_standard_check(const KernelKey& key, const nlohmann::json& check, std::string* error);
  // The stored verdicts of a kernel's gates, by gate name (resume: these are not rerun).
  std::map<std::string, GateVerdict> gates(const KernelKey& key, std::string* error);
  // The kernel's row, when there is one.
  std::optional<KernelRecord> kernel(const KernelKey& key, std::string* error);
  // Every kernel as read_kernel_reports describes, ordered by entry.
  nlohmann::json reports(std::string* error);
  // Copies every row of another results database into this one (one transaction). A kernel
  // complete in either is complete here; gate rows are keyed, so merging twice changes nothing.
  bool merge_from(const std::string& other_path, std::string* error);

  const std::string& path() const { return path_; }

 private:
  ResultsDb(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  static std::unique_ptr<ResultsDb> open_impl(const std::string& path, bool read_only, std::string* error);
  bool exec(const std::string& sql, std::string* error);
  std::string info_column() const { return has_entry_info_ ? "entry_info" : "NULL"; }
  std::string check_column() const { return has_standard_check_ ? "standard_check" : "NULL"; }
  sqlite3* db_;
  std::string path_;
  bool has_entry_info_ = true;  // false: a database from before entry_info, opened read-only
  bool has_standard_check_ = true;  // false: one from before standard_check, opened read-only
  bool has_gate_scope_ = true;      // false: one from before gates.scope, opened read-only
};

// The records of a results database as a JSON array, one per kernel, ordered by entry: each in
// the `gauntlet verify --json` format (verdict, op, source, kernel_hash, schema_hash, seed, gates
// [{name, status, category, message, replay, cases, seconds, evidence}], build, environment), plus
//   "entry"          the corpus entry (path relative to the audited folder),
//   "tool_version", "manifest_hash", "device",
//   "complete"       false while some gate is still to run (then "verdict" is "incomplete" and
//                    "gates" holds the gates stored so far),
//   "entry_error"    present for entries that are not verifiable kernels (verdict "error", no gates),
//   "entry_name", "entry_line", "entry_fields"  a JSONL line's "name" (when it has one), line number
//                    and its other fields ("model", "tag", ...), when the entry is a JSONL line,
//   "standard_check" the field's standard check of the kernel (standard_check.h), once it ran.
// An empty array and *error set when the file cannot be read as a results database.
nlohmann::json read_kernel_reports(const std::string& db_path, std::string* error);

// gauntlet merge: every input's rows into `output` (created when absent). false + *error (one
// line naming the file) on the first input that is not a results database; output keeps what was
// merged before it.
bool merge_databases(const std::vector<std::string>& inputs, const std::string& output, std::string* error);

// What a person calls a record (read_kernel_reports'): its entry, with a JSONL line's name after
// it ("pairs.jsonl:3 (19_ReLU)"); a line without a name is its file:line.
std::string record_label(const nlohmann::json& record);

// sha256 of a manifest's contract (op, entries, device, dtypes, attrs, shapes), canonical JSON.
std::string manifest_hash(const KernelManifest& m);

}  // namespace gauntlet
