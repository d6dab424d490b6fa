// A CUDA child's start on one clock with its parent's (child_start_clock.h).
#include "gauntlet/sandbox/child_start_clock.h"

#include <cstdlib>
#include <mutex>
#include <vector>

#include "gauntlet/common/trace.h"

namespace gauntlet {
namespace {

std::mutex g_mu;
ChildStartTotals g_totals;

// The integer after `"key":` inside `text` from `from` on; false when missing.
bool integer_after(const std::string& text, size_t from, const std::string& key, int64_t* out) {
  const size_t at = text.find("\"" + key + "\":", from);
  if (at == std::string::npos) return false;
  const char* start = text.c_str() + at + key.size() + 3;
  char* end = nullptr;
  const long long v = std::strtoll(start, &end, 10);
  if (end == start) return false;
  *out = v;
  return true;
}

// The body of the description's "startup_clock_ns" object (the worker's stamps); empty when absent.
std::string clock_object(const std::string& device_info) {
  const size_t object = device_info.find("\"startup_clock_ns\":{");
  if (object == std::string::npos) return "";
  const size_t close = device_info.find('}', object);
  return close == std::string::npos ? "" : device_info.substr(object, close - object);
}

}  // namespace

bool child_start_stamps(const std::string& device_info, int64_t* load_read_ns, int64_t* ready_ns) {
  const std::string body = clock_object(device_info);
  return integer_after(body, 0, "load_read", load_read_ns) && integer_after(body, 0, "ready", ready_ns) &&
         *load_read_ns > 0 && *ready_ns >= *load_read_ns;
}

void note_child_start(int64_t load_sent_ns, int64_t reply_read_ns, const std::string& device_info) {
  int64_t load_read = 0, ready = 0;
  if (!child_start_stamps(device_info, &load_read, &ready)) return;
  // One clock for both only if the child's stamps fall inside the parent's wait.
  if (load_read < load_sent_ns || ready > reply_read_ns) return;
  std::lock_guard<std::mutex> lock(g_mu);
  ++g_totals.children;
  g_totals.load_in_flight_seconds += double(load_read - load_sent_ns) * 1e-9;
  g_totals.reply_in_flight_seconds += double(reply_read_ns - ready) * 1e-9;
  g_totals.load_total_seconds += double(reply_read_ns - load_sent_ns) * 1e-9;
}

std::vector<ChildStartStep> child_start_steps(int64_t load_sent_ns, int64_t reply_read_ns, const std::string& device_info) {
  std::vector<ChildStartStep> steps;
  const std::string body = clock_object(device_info);
  // Consecutive steps of the child's start, each from its stamp to the next one's.
  const char* const order[][2] = {{"init", "child_cuda_init"}, {"context", "child_context"},
                                  {"context_made", "child_first_poison"}, {"warm", "child_preload"}, {"ready", ""}};
  int64_t begin = 0;
  const char* kind = nullptr;
  for (const auto& step : order) {
    int64_t at = 0;
    if (!integer_after(body, 0, step[0], &at) || at <= 0) return steps;
    if (kind && at >= begin && begin >= load_sent_ns && at <= reply_read_ns) steps.push_back({kind, begin, at});
    begin = at, kind = step[1];
  }
  return steps;
}

void trace_child_start(int64_t load_sent_ns, int64_t reply_read_ns, const std::string& device_info,
                       const std::string& detail) {
  if (!trace::enabled()) return;
  trace::interval("load", load_sent_ns, reply_read_ns, detail);
  for (const ChildStartStep& s : child_start_steps(load_sent_ns, reply_read_ns, device_info))
    trace::interval(s.kind, s.begin_ns, s.end_ns, detail);
}

ChildStartTotals child_start_totals() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_totals;
}

}  // namespace gauntlet
