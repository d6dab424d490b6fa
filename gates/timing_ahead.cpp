// Timing's input sets made ahead beside the correctness gates (timing_ahead.h).
#include "timing_ahead.h"

#include <chrono>

#include "gauntlet/oracle/oracle.h"

namespace gauntlet::timing_gate {

bool prepare_set(const GateContext& ctx, const Case& c, PreparedSet* out, std::string* error) {
  out->run.c = c;
  out->run.inputs = materialize_all(c);
  out->run.oracle = run_oracle(ctx.schema.oracle, out->run.inputs, c.attrs);
  if (!out->run.oracle.ok()) {
    *error = out->run.oracle.error;
    return false;
  }
  out->args = make_args(ctx.schema, out->run.inputs, c.attrs);
  return true;
}

PreparedAhead::~PreparedAhead() {
  stop_ = true;
  join();
}

void PreparedAhead::join() {
  if (thread_.joinable()) thread_.join();
}

void PreparedAhead::start(const GateContext& ctx, std::vector<Case> sets) {
  join();
  made_.clear();
  stop_ = false;
  thread_ = std::thread([this, ctx, sets = std::move(sets)] {
    const auto t0 = std::chrono::steady_clock::now();
    // Nothing may escape the thread: a set that cannot be made here is made (and its error
    // reported) by the gate itself.
    try {
      for (const Case& c : sets) {
        if (stop_) break;
        PreparedSet p;
        std::string error;
        if (prepare_set(ctx, c, &p, &error)) made_.emplace(case_to_json(c).dump(), std::move(p));
      }
    } catch (...) {
    }
    seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  });
}

std::optional<PreparedSet> PreparedAhead::take(const Case& c) {
  join();
  auto it = made_.find(case_to_json(c).dump());
  if (it == made_.end()) return std::nullopt;
  PreparedSet p = std::move(it->second);
  made_.erase(it);
  return p;
}

}  // namespace gauntlet::timing_gate
