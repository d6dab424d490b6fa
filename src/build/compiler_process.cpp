// Running a compiler (posix_spawn with a timeout, killed with its group) and reading its output.
#include "compiler_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <sstream>
#include <thread>

#include "build_util.h"
#include "gauntlet/common/interrupt.h"

extern char** environ;

namespace gauntlet::build_internal {

constexpr int kLogHeadLines = 20;  // of a failed build's log, in its error message

// ---- running the compiler ----------------------------------------------------------------------


ProcResult run_process(const std::vector<std::string>& argv, const std::string& log_path, double timeout_s) {
  ProcResult r;
  double t0 = now_s();
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  // Plain C locale: ASCII quotes and English messages, so "error:" lines can be found.
  std::vector<std::string> env_strings;
  for (char** e = environ; e && *e; ++e) {
    if (std::strncmp(*e, "LC_ALL=", 7) == 0 || std::strncmp(*e, "LANG=", 5) == 0 ||
        std::strncmp(*e, "LANGUAGE=", 9) == 0) {
      continue;
    }
    env_strings.push_back(*e);
  }
  env_strings.push_back("LC_ALL=C");
  std::vector<char*> cenv;
  for (auto& s : env_strings) cenv.push_back(const_cast<char*>(s.c_str()));
  cenv.push_back(nullptr);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t empty, defaults;
  sigemptyset(&empty);
  sigemptyset(&defaults);
  for (int s : {SIGPIPE, SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGALRM}) sigaddset(&defaults, s);
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, cargv[0], &fa, &attr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    r.spawn_errno = rc;
    r.seconds = now_s() - t0;
    return r;
  }
  r.spawned = true;
  register_child(pid);  // an interrupt kills the compiler's group too (interrupt.h)
  int status = 0;
  int sleep_us = 2000;
  for (;;) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) break;
    if (now_s() - t0 > timeout_s) {
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      r.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
    sleep_us = std::min(sleep_us * 2, 20000);
  }
  if (!r.timed_out) kill(-pid, SIGKILL);  // stragglers of the group, if any
  unregister_child(pid);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.term_signal = WTERMSIG(status);
  std::string err;
  read_file(log_path, &r.output, &err);
  r.seconds = now_s() - t0;
  return r;
}


bool proc_ok(const ProcResult& r) { return r.spawned && !r.timed_out && r.exit_code == 0; }

static std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

static bool contains_ci(const std::string& s, const std::string& needle) {
  auto it = std::search(s.begin(), s.end(), needle.begin(), needle.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  });
  return it != s.end();
}

static std::string truncate_line(std::string s, std::size_t n = 400) {
  if (s.size() > n) s = s.substr(0, n) + "...";
  return s;
}

// A diagnostic line that reports an error (not one of gcc's quoted source lines "  7 | ...").
static bool is_error_line(const std::string& l) {
  std::size_t i = 0;
  while (i < l.size() && (l[i] == ' ' || std::isdigit(static_cast<unsigned char>(l[i])))) ++i;
  if (i < l.size() && l[i] == '|') return false;
  return contains_ci(l, "error");
}

std::string first_error_line(const std::string& output) {
  auto lines = lines_of(output);
  for (const auto& l : lines) {
    if (is_error_line(l) && (l.find("error:") != std::string::npos || l.find("error :") != std::string::npos)) {
      return truncate_line(l);
    }
  }
  for (const auto& l : lines) {
    if (is_error_line(l)) return truncate_line(l);
  }
  for (const auto& l : lines) {
    if (!l.empty()) return truncate_line(l);
  }
  return "(no compiler output)";
}

std::string error_log_head(const std::string& output) {
  std::string out;
  int n = 0;
  for (const auto& l : lines_of(output)) {
    if (!is_error_line(l)) continue;
    out += truncate_line(l, 1000) + "\n";
    if (++n >= kLogHeadLines) break;
  }
  if (out.empty()) {
    for (const auto& l : lines_of(output)) {
      out += truncate_line(l, 1000) + "\n";
      if (++n >= kLogHeadLines) break;
    }
  }
  return out;
}

// Did the light prelude fail for want of a declaration the full torch/torch.h may provide?
bool worth_full_retry(const std::string& output) {
  std::vector<std::string> error_lines;
  for (const auto& l : lines_of(output)) {
    if (is_error_line(l)) error_lines.push_back(l);
  }
  if (error_lines.empty()) return true;  // unknown failure: try the other prelude
  bool all_in_wrapper = std::all_of(error_lines.begin(), error_lines.end(), [](const std::string& l) {
    return l.rfind(kWrapperName, 0) == 0 || l.find(": error: ld returned") != std::string::npos;
  });
  if (all_in_wrapper) return false;  // e.g. the entry does not exist: same in both preludes
  static const char* phrases[] = {"was not declared",   "is not a member of", "has not been declared",
                                  "does not name a",    "incomplete type",    "no matching function",
                                  "no member named",    "No such file",       "is not a namespace",
                                  "not a template",     "there are no arguments",
                                  "is undefined",       "has no member",      "cannot open source file",
                                  "undefined reference", "not a class",       "expected type-specifier",
                                  "is not a type",      "does not have a member"};
  for (const auto& l : error_lines) {
    for (const char* p : phrases) {
      if (l.find(p) != std::string::npos) return true;
    }
  }
  return false;
}

// Deterministic given the cache key (so worth caching): a plain compile error, not the machine's.
bool failure_is_deterministic(const ProcResult& r) {
  if (!r.spawned || r.timed_out || r.term_signal != 0 || r.exit_code <= 0) return false;
  for (const char* p : {"internal compiler error", "No space left", "cannot find -l", "Killed",
                        "signal terminated", "Cannot allocate memory", "out of memory",
                        "virtual memory exhausted", "Too many open files", "Permission denied"}) {
    if (r.output.find(p) != std::string::npos) return false;
  }
  return r.output.find("error") != std::string::npos;
}


}  // namespace gauntlet::build_internal
