// Internal to the kernel builder: the on-disk cache (keys, atomic writes, locks, metadata) and the
// small filesystem helpers builder.cpp and build_cache.cpp share.
#pragma once
#include <string>
#include <vector>

#include "gauntlet/common/atomic_file.h"

namespace gauntlet {
namespace build_internal {

// $GAUNTLET_CACHE, else $XDG_CACHE_HOME/gauntlet, else $HOME/.cache/gauntlet (not created).
std::string default_cache_dir();

// mkdir -p. false (and *error) when a component cannot be created.
bool make_dirs(const std::string& path, std::string* error);

// Whole file into *out. false and *error = strerror(errno) when unreadable.
bool read_file(const std::string& path, std::string* out, std::string* error);

using gauntlet::write_file_atomic;  // gauntlet/atomic_file.h

// "path:size:mtime_ns" of a file (its real path), "" when it does not exist.
std::string file_identity(const std::string& path);

// Absolute real path of an executable: `name` itself when it contains '/', else searched on
// $PATH. "" when not found or not executable.
std::string resolve_executable(const std::string& name);

// Bytes of the files a source includes with #include "..." relative to its own directory,
// recursively (so an edited helper header changes the cache key).
std::string local_include_bytes(const std::string& source_path, const std::string& source_bytes);

// Bytes of every regular file under `dir` (sorted by relative path, names included).
std::string directory_bytes(const std::string& dir);

// An exclusive flock on `path` (created), released by the destructor.
class FileLock {
 public:
  explicit FileLock(const std::string& path);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  bool locked() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// The metadata file <cache_key>.json beside <cache_key>.so.
struct CacheRecord {
  bool ok = false;
  std::string source;
  std::string source_hash;
  std::vector<std::string> entries;
  std::string device;
  bool address_sanitizer = false;
  std::string prelude;
  std::string compiler;
  double seconds = 0.0;
  std::string error;     // failed builds (deterministic compile errors) are cached too
  std::string log_head;
};
bool read_cache_record(const std::string& json_path, CacheRecord* record);
bool write_cache_record(const std::string& json_path, const CacheRecord& record);

// A child process's end (run_process).
struct ProcResult {
  bool spawned = false;
  int spawn_errno = 0;
  bool timed_out = false;
  int exit_code = -1;   // when it exited
  int term_signal = 0;  // when a signal ended it
  std::string output;   // stdout and stderr together
  double seconds = 0.0;
};
// Runs argv (argv[0] an absolute path) in its own process group, output to log_path; the group is
// killed with SIGKILL when it runs past timeout_s.
ProcResult run_process(const std::vector<std::string>& argv, const std::string& log_path, double timeout_s);

}  // namespace build_internal
}  // namespace gauntlet
