// The kernel builder's on-disk cache: atomic writes, locks, metadata, cache-key inputs (sha256: common/digest.h).
#include "gauntlet/build/build_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "gauntlet/build/builder.h"

namespace gauntlet {

namespace build_internal {

std::string default_cache_dir() {
  const char* g = std::getenv("GAUNTLET_CACHE");
  if (g && *g) return g;
  const char* x = std::getenv("XDG_CACHE_HOME");
  if (x && *x) return std::string(x) + "/gauntlet";
  const char* h = std::getenv("HOME");
  if (h && *h) return std::string(h) + "/.cache/gauntlet";
  return "/tmp/gauntlet-cache-" + std::to_string(getuid());
}

bool make_dirs(const std::string& path, std::string* error) {
  if (path.empty()) {
    if (error) *error = "empty directory path";
    return false;
  }
  std::string cur;
  std::size_t pos = 0;
  while (pos != std::string::npos) {
    std::size_t next = path.find('/', pos + 1);
    cur = path.substr(0, next);
    pos = next;
    if (cur.empty() || cur == "/") continue;
    if (mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST) {
      if (error) *error = "cannot create directory " + cur + ": " + std::strerror(errno);
      return false;
    }
  }
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    if (error) *error = "not a directory: " + path;
    return false;
  }
  return true;
}

bool read_file(const std::string& path, std::string* out, std::string* error) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (error) *error = std::strerror(errno);
    return false;
  }
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    close(fd);
    if (error) *error = std::strerror(EISDIR);
    return false;
  }
  out->clear();
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (error) *error = std::strerror(errno);
      close(fd);
      return false;
    }
    if (n == 0) break;
    out->append(buf, static_cast<std::size_t>(n));
  }
  close(fd);
  return true;
}


std::string file_identity(const std::string& path) {
  char* real = realpath(path.c_str(), nullptr);
  if (!real) return "";
  std::string rp = real;
  free(real);
  struct stat st;
  if (stat(rp.c_str(), &st) != 0) return "";
  long long mtime_ns = static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
  return rp + ":" + std::to_string(static_cast<long long>(st.st_size)) + ":" + std::to_string(mtime_ns);
}

std::string resolve_executable(const std::string& name) {
  auto usable = [](const std::string& p) {
    struct stat st;
    return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(p.c_str(), X_OK) == 0;
  };
  auto real = [](const std::string& p) {
    char* r = realpath(p.c_str(), nullptr);
    std::string s = r ? r : p;
    free(r);
    return s;
  };
  if (name.empty()) return "";
  if (name.find('/') != std::string::npos) return usable(name) ? real(name) : "";
  const char* path_env = std::getenv("PATH");
  std::string path = path_env ? path_env : "/usr/local/bin:/usr/bin:/bin";
  std::stringstream ss(path);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    if (dir.empty()) dir = ".";
    std::string cand = dir + "/" + name;
    if (usable(cand)) return real(cand);
  }
  return "";
}

std::string local_include_bytes(const std::string& source_path, const std::string& source_bytes) {
  static const std::regex include_re(R"(^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\")");
  std::string out;
  std::set<std::string> seen;
  std::function<void(const std::string&, const std::string&, int)> scan =
      [&](const std::string& file, const std::string& bytes, int depth) {
        if (depth > 16) return;
        std::string dir = file.substr(0, file.find_last_of('/') == std::string::npos
                                             ? 0
                                             : file.find_last_of('/') + 1);
        std::istringstream in(bytes);
        std::string line;
        while (std::getline(in, line)) {
          if (line.find("include") == std::string::npos) continue;
          std::smatch m;
          if (!std::regex_search(line, m, include_re)) continue;
          std::string name = m[1];
          std::string path = name[0] == '/' ? name : dir + name;
          char* r = realpath(path.c_str(), nullptr);
          std::string key = r ? r : path;
          free(r);
          if (!seen.insert(key).second) continue;
          std::string inc, err;
          if (!read_file(key, &inc, &err)) {
            out += "missing:" + name + "\n";  // found elsewhere on the include path, or absent
            continue;
          }
          out += "include:" + name + ":" + std::to_string(inc.size()) + "\n" + inc;
          scan(key, inc, depth + 1);
        }
      };
  scan(source_path, source_bytes, 0);
  return out;
}

std::string directory_bytes(const std::string& dir) {
  std::vector<std::pair<std::string, std::string>> files;
  std::function<void(const std::string&, const std::string&)> walk = [&](const std::string& abs,
                                                                         const std::string& rel) {
    DIR* d = opendir(abs.c_str());
    if (!d) return;
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n == "." || n == "..") continue;
      std::string a = abs + "/" + n, r = rel.empty() ? n : rel + "/" + n;
      struct stat st;
      if (stat(a.c_str(), &st) != 0) continue;
      if (S_ISDIR(st.st_mode)) {
        walk(a, r);
      } else if (S_ISREG(st.st_mode)) {
        std::string bytes, err;
        if (read_file(a, &bytes, &err)) files.emplace_back(r, bytes);
      }
    }
    closedir(d);
  };
  walk(dir, "");
  std::sort(files.begin(), files.end());
  std::string out;
  for (const auto& [name, bytes] : files) {
    out += name + ":" + std::to_string(bytes.size()) + "\n" + bytes;
  }
  return out;
}

FileLock::FileLock(const std::string& path) {
  fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) return;
  while (flock(fd_, LOCK_EX) != 0) {
    if (errno != EINTR) {
      close(fd_);
      fd_ = -1;
      return;
    }
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) {
    flock(fd_, LOCK_UN);
    close(fd_);
  }
}

bool read_cache_record(const std::string& json_path, CacheRecord* r) {
  std::string bytes, err;
  if (!read_file(json_path, &bytes, &err)) return false;
  try {
    auto j = nlohmann::json::parse(bytes);
    r->ok = j.at("ok").get<bool>();
    r->source = j.value("source", "");
    r->source_hash = j.value("source_hash", "");
    r->entries = j.value("entries", std::vector<std::string>{});
    r->device = j.value("device", "");
    r->address_sanitizer = j.value("address_sanitizer", false);
    r->prelude = j.value("prelude", "");
    r->compiler = j.value("compiler", "");
    r->seconds = j.value("seconds", 0.0);
    r->error = j.value("error", "");
    r->log_head = j.value("log_head", "");
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

bool write_cache_record(const std::string& json_path, const CacheRecord& r) {
  nlohmann::json j;
  j["ok"] = r.ok;
  j["source"] = r.source;
  j["source_hash"] = r.source_hash;
  j["entries"] = r.entries;
  j["device"] = r.device;
  j["address_sanitizer"] = r.address_sanitizer;
  j["prelude"] = r.prelude;
  j["compiler"] = r.compiler;
  j["seconds"] = r.seconds;
  if (!r.ok) {
    j["error"] = r.error;
    j["log_head"] = r.log_head;
  }
  // Compiler output may hold bytes that are not UTF-8: replace them rather than throw.
  return write_file_atomic(json_path, j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

}  // namespace build_internal
}  // namespace gauntlet

namespace gauntlet {

bool write_file_atomic(const std::string& path, const std::string& bytes) {
  static std::atomic<unsigned> counter{0};
  std::string tmp = path + ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  std::size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = write(fd, bytes.data() + off, bytes.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      close(fd);
      unlink(tmp.c_str());
      return false;
    }
    off += static_cast<std::size_t>(n);
  }
  if (close(fd) != 0 || rename(tmp.c_str(), path.c_str()) != 0) {
    unlink(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace gauntlet
