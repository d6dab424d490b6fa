// A host-wide timeline for measurements (include/gauntlet/common/trace.h).
#include "gauntlet/common/trace.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>

namespace gauntlet::trace {

const std::string& directory() {
  static const std::string dir = [] {
    const char* v = std::getenv("GAUNTLET_TRACE_DIR");
    return std::string(v && *v ? v : "");
  }();
  return dir;
}

Writer::Writer(const std::string& dir) : path_(dir + "/trace-" + std::to_string(long(getpid())) + ".tsv") {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

Writer::~Writer() {
  if (fd_ >= 0) ::close(fd_);
}

void Writer::interval(const char* kind, int64_t begin_ns, int64_t end_ns, const std::string& detail) {
  if (!ok()) return;
  std::string clean = detail;
  for (char& c : clean)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  const std::string line = std::string(kind) + "\t" + std::to_string(begin_ns) + "\t" + std::to_string(end_ns) +
                           "\t" + std::to_string(long(getpid())) + "\t" + std::to_string(long(gettid())) + "\t" + clean + "\n";
  // O_APPEND and one write a line: lines from threads and processes never interleave.
  if (::write(fd_, line.data(), line.size()) != ssize_t(line.size())) failed_ = true;
}

void interval(const char* kind, int64_t begin_ns, int64_t end_ns, const std::string& detail) {
  if (!enabled()) return;
  static Writer* writer = new Writer(directory());  // never destroyed: threads may trace during exit
  writer->interval(kind, begin_ns, end_ns, detail);
}

bool parse_line(const std::string& line, Interval* out) {
  std::istringstream in(line);
  std::string begin, end, pid, tid;
  if (!std::getline(in, out->kind, '\t') || !std::getline(in, begin, '\t') || !std::getline(in, end, '\t') ||
      !std::getline(in, pid, '\t') || !std::getline(in, tid, '\t'))
    return false;
  out->detail.clear();
  std::getline(in, out->detail);
  try {
    size_t used = 0;
    out->begin_ns = std::stoll(begin, &used);
    if (used != begin.size()) return false;
    out->end_ns = std::stoll(end, &used);
    if (used != end.size()) return false;
    out->pid = std::stol(pid, &used);
    if (used != pid.size()) return false;
    out->tid = std::stol(tid, &used);
    if (used != tid.size()) return false;
  } catch (const std::exception&) {
    return false;
  }
  return !out->kind.empty() && out->end_ns >= out->begin_ns;
}

}  // namespace gauntlet::trace
