// The audit's progress bar or periodic lines while it runs, and its summary table at the end.
#include "audit_progress.h"

#include "gauntlet/cases/contract_scope.h"
#include "gauntlet/run/report_text.h"
#include "gauntlet/audit/results_db.h"
#include "gauntlet/run/root_cause.h"
#include "gauntlet/run/standard_check.h"

#include <algorithm>
#include <map>
#include <vector>

namespace gauntlet {
namespace {

std::string duration(double s) {
  char buf[32];
  const long t = long(s + 0.5);
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%ldh%02ldm", t / 3600, t / 60 % 60);
  else if (t >= 60) std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
  else std::snprintf(buf, sizeof buf, "%lds", t);
  return buf;
}

}  // namespace

AuditProgress::AuditProgress(int kernels, int gates, bool terminal, int line_seconds, std::FILE* out)
    : kernels_total_(kernels), gates_total_(gates), terminal_(terminal), line_seconds_(std::max(1, line_seconds)), out_(out) {
  ticker_ = std::thread([this] { tick(); });
}

AuditProgress::~AuditProgress() { stop(); }

void AuditProgress::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    cv_.notify_all();
  }
  ticker_.join();
  std::lock_guard<std::mutex> lock(mu_);
  draw(true);
}

// The ticker keeps the ETA moving on a terminal (and the plain lines coming) while a long gate runs.
void AuditProgress::tick() {
  std::unique_lock<std::mutex> lock(mu_);
  const auto period = terminal_ ? std::chrono::milliseconds(500) : std::chrono::milliseconds(1000 * line_seconds_);
  while (!cv_.wait_for(lock, period, [&] { return stopped_; })) draw(false);
}

void AuditProgress::gate_done(const GateVerdict& v) {
  std::lock_guard<std::mutex> lock(mu_);
  ++gates_done_;
  gates_failing_ += is_failing(v.status);
  if (terminal_) draw(false);
}

void AuditProgress::kernel_done(const std::string& verdict) {
  std::lock_guard<std::mutex> lock(mu_);
  ++kernels_done_;
  kernels_unsafe_ += verdict == "unsafe";
  kernels_failing_ += verdict != "pass" && verdict != "unsafe";
  if (terminal_) draw(false);
}

std::string AuditProgress::line() {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  // The ETA follows gate runs (kernels differ too much in gates left to count by kernels).
  std::string eta = "-";
  if (gates_done_ > 0 && gates_total_ > gates_done_) eta = duration(elapsed / gates_done_ * (gates_total_ - gates_done_));
  else if (gates_total_ > 0 && gates_done_ >= gates_total_) eta = "0s";
  // Unsafe kernels only when there are any: the bar's line should fit a terminal.
  std::string unsafe;
  if (kernels_unsafe_ > 0) unsafe = ", " + std::to_string(kernels_unsafe_) + " unsafe kernels";
  char buf[320];
  std::snprintf(buf, sizeof buf, "%d/%d kernels, %d/%d gates, failing so far: %d kernels, %d gates%s; elapsed %s, ETA %s",
                kernels_done_, kernels_total_, gates_done_, gates_total_, kernels_failing_, gates_failing_,
                unsafe.c_str(), duration(elapsed).c_str(), eta.c_str());
  return buf;
}

void AuditProgress::draw(bool final) {
  if (kernels_total_ == 0) return;
  if (terminal_) {
    const int width = 24;
    const double frac = gates_total_ > 0 ? std::min(1.0, double(gates_done_) / gates_total_) : 1.0;
    const int filled = int(frac * width + 0.5);
    std::fprintf(out_, "\r\033[K[%s%s] %s", std::string(size_t(filled), '#').c_str(),
                 std::string(size_t(width - filled), '.').c_str(), line().c_str());
    if (final) std::fprintf(out_, "\n");
  } else {
    std::fprintf(out_, "audit: %s\n", line().c_str());
  }
  std::fflush(out_);
}

void print_audit_summary(const nlohmann::json& records, const AuditSummaryInfo& info, std::FILE* out) {
  std::map<std::string, int> verdicts, categories;
  struct GateCounts {
    int fail = 0, error = 0, harness = 0, skip = 0, pass = 0;
    int outside = 0;  // of fail and error: the deciding case lay outside the kernel's contract
  };
  std::map<std::string, GateCounts> per_gate;
  std::vector<std::string> gate_order = gate_names();
  std::vector<std::string> not_passing;
  int entry_errors = 0;
  for (const nlohmann::json& r : records) {
    const std::string verdict = r.value("verdict", "");
    ++verdicts[verdict];
    if (r.contains("entry_error")) {
      ++entry_errors;
      not_passing.push_back(record_label(r) + ": not verifiable: " + r.value("entry_error", ""));
      continue;
    }
    std::vector<std::string> bad;
    for (const nlohmann::json& g : r.value("gates", nlohmann::json::array())) {
      const std::string name = g.value("name", ""), status = g.value("status", ""), category = g.value("category", "");
      if (std::find(gate_order.begin(), gate_order.end(), name) == gate_order.end()) gate_order.push_back(name);
      GateCounts& c = per_gate[name];
      if (status == "pass") ++c.pass;
      else if (status == "fail") ++c.fail;
      else if (status == "error") ++c.error;
      else if (status == "harness-error") ++c.harness;
      else if (status == "skip") ++c.skip;
      // A gate stored before scopes existed has none: in-contract. A harness-error is gauntlet's
      // fault whatever case it ran.
      const bool outside = (status == "fail" || status == "error") && json_text(g, "scope") == kOutOfContract;
      c.outside += outside;
      if (status == "fail" || status == "error" || status == "harness-error") {
        ++categories[category.empty() ? "(none)" : category];
        std::string why = category;
        if (outside) why += std::string(why.empty() ? "" : ", ") + kOutOfContract;
        bad.push_back(name + " " + status + (why.empty() ? "" : " (" + why + ")"));
      }
    }
    if (verdict != "pass") {
      std::string line = record_label(r) + ": " + verdict;
      std::string gates;
      for (size_t i = 0; i < bad.size(); ++i) gates += (i ? ", " : "") + bad[i];
      // A failing kernel leads with its one root cause (root_cause.h); its failing gates follow on
      // a line of their own. A record from before root causes keeps the gates on its first line.
      const bool has_cause = r.contains("root_cause") && r["root_cause"].is_object();
      if (has_cause) line += ": " + root_cause_line(r["root_cause"]) + (gates.empty() ? "" : "\n  gates: " + gates);
      else if (!gates.empty()) line += ": " + gates;
      not_passing.push_back(line);
    }
  }
  std::fprintf(out, "gauntlet audit: %zu kernels (%d not verifiable), seed %llu, shard %s, %s, results in %s\n",
               records.size(), entry_errors, (unsigned long long)info.seed, info.shard.c_str(),
               duration(info.seconds).c_str(), info.db_path.c_str());
  if (info.already_complete) std::fprintf(out, "  %d kernels were already complete in the database (not verified again)\n", info.already_complete);
  if (info.checks_only)
    std::fprintf(out, "  %d of them had no standard check stored: it ran for them alone\n", info.checks_only);
  if (info.harness_errors_retried)
    std::fprintf(out, "  %d gates an earlier run left as harness-error were run again (gauntlet's faults, not verdicts)\n",
                 info.harness_errors_retried);
  if (info.duplicates) std::fprintf(out, "  %d entries repeat an earlier entry's kernel and contract (verified once)\n", info.duplicates);
  if (info.cuda_skipped)
    std::fprintf(out, "  %d CUDA kernels not verified: %s (not stored; rerun on a GPU machine)\n", info.cuda_skipped,
                 info.cuda_skip_reason.c_str());
  if (info.dtype_skipped)
    std::fprintf(out, "  %d kernels not verified: %s (not stored; rerun with a gauntlet built on a newer LibTorch)\n",
                 info.dtype_skipped, info.dtype_skip_reason.c_str());
  if (info.kernels_verified > 0) {
    const double per = 1e3 / info.kernels_verified;
    const auto& t = info.overhead_seconds;
    std::fprintf(out, "  audit bookkeeping: %.2f ms per kernel verified (discovery and planning %.2f, lanes' database writes "
                 "%.2f, summary and --json %.2f; gate processes excluded)\n",
                 (t[0] + t[1] + t[2]) * per, t[0] * per, t[1] * per, t[2] * per);
  }
  if (info.gates_taken)
    std::fprintf(out, "  %d gates run by lanes that had run out of kernels, for the lanes still verifying\n",
                 info.gates_taken);
  std::string vline;
  for (const char* v : {"pass", "unsafe", "fail", "error", "incomplete"})
    if (verdicts.count(v)) vline += std::string(vline.empty() ? "" : ", ") + v + " " + std::to_string(verdicts[v]);
  std::fprintf(out, "verdicts: %s\n", vline.empty() ? "none" : vline.c_str());
  std::fprintf(out, "  %-15s %6s %6s %6s %8s %6s %8s\n", "gate", "pass", "fail", "error", "harness", "skip", "outside");
  int outside = 0;
  for (const std::string& name : gate_order) {
    if (!per_gate.count(name)) continue;
    const GateCounts& c = per_gate[name];
    std::fprintf(out, "  %-15s %6d %6d %6d %8d %6d %8d\n", name.c_str(), c.pass, c.fail, c.error, c.harness, c.skip,
                 c.outside);
    outside += c.outside;
  }
  if (outside)
    std::fprintf(out, "  (outside: of fail and error, those whose deciding case lies outside the kernel's declared contract)\n");
  std::string cline;
  std::vector<std::pair<std::string, int>> cats(categories.begin(), categories.end());
  std::stable_sort(cats.begin(), cats.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  for (const auto& [name, n] : cats) cline += (cline.empty() ? "" : ", ") + name + " " + std::to_string(n);
  std::fprintf(out, "failure categories (failing gates): %s\n", cline.empty() ? "none" : cline.c_str());
  // The standard check against gauntlet, and first the kernels where the two disagree the way
  // that needs a look (the standard check rejects what gauntlet passes).
  for (const std::string& l : standard_check_lines(standard_check_table(records))) std::fprintf(out, "%s\n", l.c_str());
  // The list is for reading at a glance; past a screenful the JSON and the database are the record.
  // Each line of an entry (its root cause, its gates) is cut to 300 characters.
  const size_t shown = std::min<size_t>(not_passing.size(), 100);
  if (!not_passing.empty()) std::fprintf(out, "not passing (%zu):\n", not_passing.size());
  for (size_t i = 0; i < shown; ++i) {
    size_t start = 0;
    for (size_t end; start <= not_passing[i].size(); start = end + 1) {
      end = std::min(not_passing[i].find('\n', start), not_passing[i].size());
      const std::string part = not_passing[i].substr(start, end - start);
      std::fprintf(out, "  %s\n", part.size() > 300 ? (part.substr(0, 297) + "...").c_str() : part.c_str());
    }
  }
  if (shown < not_passing.size()) std::fprintf(out, "  ... %zu more (see --json or the database)\n", not_passing.size() - shown);
}

}  // namespace gauntlet
