// A host-wide timeline for measurements: intervals on CLOCK_MONOTONIC from every gauntlet process, merged by tools/gpu/trace_timeline.py.
#pragma once
#include <cstdint>
#include <string>

#include "gauntlet/common/monotonic_clock.h"  // monotonic_ns: the clock every interval is stamped with

namespace gauntlet::trace {

// The directory named by GAUNTLET_TRACE_DIR, read once; empty (the default) turns tracing off and
// every call below into a test of one flag. Totals in reports say how much of something happened;
// a timeline says what overlapped what across processes (issue 18: which serial resource a run
// waits on), which no per-process total can.
const std::string& directory();
inline bool enabled() { return !directory().empty(); }

// Appends one interval, "kind<TAB>begin_ns<TAB>end_ns<TAB>pid<TAB>tid<TAB>detail", to this process's file
// `<directory>/trace-<pid>.tsv` (one write a line: lines of threads and processes never interleave).
// Tabs and newlines in `detail` become spaces. A file that cannot be opened or written turns tracing
// off for this process, silently: a measurement aid must never change a verdict.
void interval(const char* kind, int64_t begin_ns, int64_t end_ns, const std::string& detail = "");

// One process's trace file in `dir`; what interval() writes through (tests make their own).
class Writer {
 public:
  explicit Writer(const std::string& dir);
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;
  const std::string& path() const { return path_; }
  bool ok() const { return fd_ >= 0 && !failed_; }
  void interval(const char* kind, int64_t begin_ns, int64_t end_ns, const std::string& detail);

 private:
  std::string path_;
  int fd_ = -1;
  bool failed_ = false;  // written once a write fell short; read racily, which can only drop lines
};

// One line of a trace file, parsed (tests and tools read what interval wrote); false when malformed.
struct Interval {
  std::string kind;
  int64_t begin_ns = 0, end_ns = 0;
  long pid = 0, tid = 0;  // the thread tells a process's gates apart (each runs in its own)
  std::string detail;
};
bool parse_line(const std::string& line, Interval* out);

}  // namespace gauntlet::trace
