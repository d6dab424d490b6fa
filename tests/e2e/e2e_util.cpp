// Runs the real binaries for end-to-end tests, with a timeout and captured output.
#include "e2e_util.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>

namespace gauntlet::e2e {

RunResult run_gauntlet(const std::vector<std::string>& args, int timeout_seconds) {
  RunResult r;
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) return r;
  std::vector<std::string> argv = {GAUNTLET_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    dup2(err[1], 2);
    setpgid(0, 0);
    execv(cargv[0], cargv.data());
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    const double left = timeout_seconds - std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (left <= 0) {
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      break;
    }
    if (poll(fds, 2, int(left * 1000)) <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        fds[i].fd = -1;
        --open_fds;
      } else {
        (i == 0 ? r.out : r.err).append(buf, size_t(n));
      }
    }
  }
  close(out[0]);
  close(err[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

std::string source_dir() { return GAUNTLET_SOURCE_DIR; }

std::string temp_dir() {
  char tmpl[] = "/tmp/gauntlet-e2e-XXXXXX";
  return mkdtemp(tmpl);
}

void write_file(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool python_with_torch(std::string* why) {
  std::string python;
  if (const char* env = getenv("GAUNTLET_PYTHON"); env && *env) python = env;
  else if (access("/usr/bin/python3", X_OK) == 0) python = "/usr/bin/python3";
  else if (access("/usr/local/bin/python3", X_OK) == 0) python = "/usr/local/bin/python3";
  if (python.empty()) return (*why = "no python3 (install python3 and python3-torch, or set GAUNTLET_PYTHON)", false);
  const std::string cmd = "'" + python + "' -c 'import torch' >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0)
    return (*why = python + " cannot import torch (install python3-torch, or set GAUNTLET_PYTHON)", false);
  return true;
}

Verified verify_report(const std::vector<std::string>& args) {
  const std::string dir = temp_dir();
  std::vector<std::string> all = {"verify"};
  all.insert(all.end(), args.begin(), args.end());
  for (const std::string& a : {std::string("--seed"), std::string("1"), std::string("--quiet"), std::string("--replay-dir"),
                               dir + "/replays", std::string("--json"), dir + "/r.json"})
    all.push_back(a);
  RunResult r = run_gauntlet(all);
  return Verified{r.exit_code, r.out + r.err, nlohmann::json::parse(read_file(dir + "/r.json"), nullptr, false)};
}

const nlohmann::json& report_gate(const nlohmann::json& report, const std::string& name) {
  static const nlohmann::json none;
  if (report.is_object() && report.contains("gates"))
    for (const auto& g : report["gates"])
      if (g.value("name", "") == name) return g;
  return none;
}

}  // namespace gauntlet::e2e

namespace gauntlet::e2e {

pid_t spawn_gauntlet(const std::vector<std::string>& args, const std::string& log) {
  std::vector<std::string> argv = {GAUNTLET_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    setpgid(0, 0);
    execv(cargv[0], cargv.data());
    _exit(127);
  }
  setpgid(pid, pid);  // also from this side: a signal to the group right after fork reaches it
  return pid;
}

int db_scalar(const std::string& db, const std::string& sql) {
  sqlite3* h = nullptr;
  int n = -1;
  if (sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(h, sql.c_str(), -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
      n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
  }
  sqlite3_close(h);
  return n;
}

}  // namespace gauntlet::e2e
