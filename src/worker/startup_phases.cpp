// device=cuda: where a child's start went, for reports (startup_phases.h).
#include "startup_phases.h"

#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace gauntlet::worker {

double seconds_since_process_start() {
  std::ifstream in("/proc/self/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The command name (field 2) may hold spaces and parentheses: the fields after it start past the
  // last ')'. The start time is field 22, the 20th after that parenthesis.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream fields(stat.substr(close + 1));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i)
    if (i == 22) {
      const long ticks_per_second = sysconf(_SC_CLK_TCK);
      timespec now{};
      if (ticks_per_second <= 0 || clock_gettime(CLOCK_BOOTTIME, &now) != 0) return -1;
      const double started = double(std::stoull(field)) / double(ticks_per_second);
      return double(now.tv_sec) + double(now.tv_nsec) * 1e-9 - started;
    }
  return -1;
}

std::string with_startup_phases(const std::string& device_json, const StartupPhases& p) {
  if (device_json.size() < 2 || device_json.front() != '{' || device_json.back() != '}') return device_json;
  char buf[768];
  std::snprintf(buf, sizeof buf,
                "\"startup_seconds\":{\"before_serve\":%.4f,\"load_wait\":%.4f,\"sandbox\":%.4f,\"dlopen\":%.4f,"
                "\"cuda_init\":%.4f,\"context\":%.4f,\"preload\":%.4f},\"startup_clock_ns\":{\"load_read\":%lld,"
                "\"ready\":%lld,\"init\":%lld,\"context\":%lld,\"context_made\":%lld,\"warm\":%lld},"
                "\"preloaded\":{\"symbols\":%d,\"kernels\":%d}",
                p.before_serve, p.load_wait, p.sandbox, p.dlopen, p.cuda_init, p.context, p.preload,
                static_cast<long long>(p.load_read_ns), static_cast<long long>(p.ready_ns),
                static_cast<long long>(p.init_ns), static_cast<long long>(p.context_ns),
                static_cast<long long>(p.context_made_ns), static_cast<long long>(p.warm_ns), p.preload_symbols,
                p.preload_kernels);
  const std::string body = device_json.substr(0, device_json.size() - 1);
  return body + (body.size() > 1 ? "," : "") + buf + "}";
}

}  // namespace gauntlet::worker
