// End to end: SIGINT (to the process group, as a terminal sends it) and SIGTERM stop verify and
// audit at once: every child killed, stored gates kept, one resume line, no Python tracebacks.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "../test_files.h"
#include "e2e_util.h"

using namespace gauntlet::e2e;

namespace {

const std::string kCorpus = GAUNTLET_SOURCE_DIR "/corpus";

struct TempDir {
  std::string path = temp_dir();
  ~TempDir() { gauntlet::testing::remove_tree(path); }
};

// pid -> (parent, start time) of every process; the start time tells a survivor from a reused pid.
std::map<pid_t, std::pair<pid_t, std::string>> processes() {
  std::map<pid_t, std::pair<pid_t, std::string>> out;
  DIR* d = opendir("/proc");
  while (dirent* e = d ? readdir(d) : nullptr) {
    const pid_t p = pid_t(atoi(e->d_name));
    if (p <= 0) continue;
    std::ifstream in("/proc/" + std::string(e->d_name) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(in)), {});
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    std::string state, field;
    pid_t ppid = 0;
    rest >> state >> ppid;
    for (int i = 0; i < 17; ++i) rest >> field;  // field 22: starttime
    if (state != "Z") out[p] = {ppid, field};
  }
  if (d) closedir(d);
  return out;
}

std::map<pid_t, std::string> descendants(pid_t root) {
  const auto all = processes();
  std::map<pid_t, std::string> found;
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& [p, info] : all)
      if ((info.first == root || found.count(info.first)) && !found.count(p)) found[p] = info.second, grew = true;
  }
  return found;
}

std::string cmdline(pid_t p) {
  std::ifstream in("/proc/" + std::to_string(p) + "/cmdline");
  std::string s((std::istreambuf_iterator<char>(in)), {});
  for (char& c : s) if (c == '\0') c = ' ';
  return s;
}

// Waits for `pid` at most `seconds`; its wait status, or -1 (then it is killed).
int wait_for(pid_t pid, int seconds) {
  int status = 0;
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds); std::chrono::steady_clock::now() < until;) {
    if (waitpid(pid, &status, WNOHANG) == pid) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(-pid, SIGKILL);
  waitpid(pid, &status, 0);
  return -1;
}

// The real uid of `p` (-1 when it is gone).
int uid_of(pid_t p) {
  std::ifstream in("/proc/" + std::to_string(p) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("Uid:", 0) == 0) return std::atoi(line.c_str() + 4);
  return -1;
}

int count_lines_with(const std::string& log, const std::string& needle) {
  std::istringstream in(log);
  int n = 0;
  for (std::string line; std::getline(in, line);) n += line.find(needle) != std::string::npos;
  return n;
}

// Everything the interrupted run had started is gone (same pid and start time: not a reused pid).
void expect_no_survivors(const std::map<pid_t, std::string>& before) {
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // SIGKILLed ones are reaped by init
  const auto now = processes();
  for (const auto& [p, start] : before) {
    auto it = now.find(p);
    EXPECT_FALSE(it != now.end() && it->second.second == start) << "survivor " << p << ": " << cmdline(p);
  }
}

void interrupted_audit(int sig) {
  TempDir t;
  const std::string corpus = t.path + "/corpus", db = t.path + "/a.db";
  mkdir(corpus.c_str(), 0755);
  for (const char* f : {"hostile/infinite_loop.json", "hostile/infinite_loop.cpp", "modules/relu_hot_path.json", "modules/relu_hot_path.py"}) {
    const std::string name = std::string(f).substr(std::string(f).find('/') + 1);
    write_file(corpus + "/" + name, read_file(kCorpus + "/" + f));
  }
  const std::vector<std::string> args = {"audit", corpus, "--db", db, "--jobs", "2", "--gates", "contract,accuracy",
                                         "--replay-dir", t.path + "/replays", "--progress-every", "1"};
  std::vector<std::string> first = args;
  first.insert(first.end(), {"--timeout", "120"});  // the hang lasts far beyond the interrupt
  const pid_t pid = spawn_gauntlet(first, t.path + "/first.log");
  // Mid-run for certain: the module's gates are stored (its Python zygote runs) while the
  // infinite loop's gates hang for two minutes.
  const std::string module_gates = "SELECT count(*) FROM gates g JOIN kernels k USING (kernel_hash, manifest_hash, tool_version, seed) WHERE k.entry LIKE '%relu_hot_path%'";
  bool zygote = false;
  std::map<pid_t, std::string> before;
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(240);
       std::chrono::steady_clock::now() < until && !(zygote && db_scalar(db, module_gates) >= 2);) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    before = descendants(pid);
    for (const auto& [p, start] : before) zygote |= cmdline(p).find("gauntlet_pyworker.py --zygote") != std::string::npos;
  }
  ASSERT_TRUE(zygote) << "no Python zygote seen: " << read_file(t.path + "/first.log");
  ASSERT_EQ(db_scalar(db, module_gates), 2) << read_file(t.path + "/first.log");
  before = descendants(pid);
  ASSERT_EQ(db_scalar(db, "SELECT count(*) FROM kernels WHERE verdict IS NOT NULL AND entry LIKE '%infinite%'"), 0);
  const auto t0 = std::chrono::steady_clock::now();
  if (sig == SIGINT) kill(-pid, SIGINT);  // the whole group, as the terminal's Ctrl-C
  else kill(pid, sig);                   // the parent alone, as `kill`, a scheduler or a closed terminal sends it
  const int status = wait_for(pid, 30);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string log = read_file(t.path + "/first.log");
  ASSERT_TRUE(status != -1 && WIFEXITED(status)) << log;
  EXPECT_EQ(WEXITSTATUS(status), 128 + sig) << log;
  EXPECT_LT(took, 10.0) << "not prompt";
  EXPECT_EQ(count_lines_with(log, "to resume"), 1) << log;
  EXPECT_EQ(count_lines_with(log, std::string("interrupted by ") + (sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "SIGHUP")), 1) << log;
  EXPECT_EQ(log.find("Traceback"), std::string::npos) << log;
  EXPECT_EQ(log.find("KeyboardInterrupt"), std::string::npos) << log;
  EXPECT_EQ(log.find("harness error"), std::string::npos) << log;
  expect_no_survivors(before);
  // The database opens, kept the module's gates, holds nothing of the interrupt's killing, and a
  // rerun with it completes without running those gates again.
  const int stored = db_scalar(db, "SELECT count(*) FROM gates");
  EXPECT_EQ(db_scalar(db, module_gates), 2);
  EXPECT_EQ(db_scalar(db, "SELECT count(*) FROM gates WHERE status = 'harness-error' OR category = 'crash'"), 0);
  const std::string seconds_sql = "SELECT CAST(sum(g.seconds) * 1e6 AS INTEGER) FROM gates g JOIN kernels k USING (kernel_hash, manifest_hash, tool_version, seed) WHERE k.entry LIKE '%relu_hot_path%'";
  const int module_seconds = db_scalar(db, seconds_sql);
  std::vector<std::string> again = args;
  again.insert(again.end(), {"--timeout", "2"});
  const RunResult rerun = run_gauntlet(again, 300);
  EXPECT_EQ(rerun.exit_code, 1) << rerun.err;  // the infinite loop errors: not every kernel passes
  EXPECT_EQ(db_scalar(db, "SELECT count(*) FROM gates"), 4) << stored << " stored before; " << rerun.err;
  EXPECT_EQ(db_scalar(db, "SELECT count(*) FROM kernels WHERE verdict IS NOT NULL"), 2) << rerun.out;
  EXPECT_EQ(db_scalar(db, seconds_sql), module_seconds) << "the module's stored gates ran again";
}

}  // namespace

TEST(Interrupt, SigintToTheGroupStopsAnAuditResumably) {
  REQUIRE_PYTHON_TORCH();
  interrupted_audit(SIGINT);
}

TEST(Interrupt, SigtermToTheParentStopsAnAuditResumably) {
  REQUIRE_PYTHON_TORCH();
  interrupted_audit(SIGTERM);
}

TEST(Interrupt, SighupToTheParentStopsAnAuditResumably) {
  REQUIRE_PYTHON_TORCH();
  interrupted_audit(SIGHUP);
}

TEST(Interrupt, VerifyStopsOnSigintSigtermAndSighupWithOneLineAndNoOrphans) {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    TempDir t;
    const std::string json = t.path + "/report.json";
    const pid_t pid = spawn_gauntlet({"verify", kCorpus + "/hostile/infinite_loop.json", "--gates", "contract,accuracy", "--timeout", "120",
                                      "--seed", "1", "--json", json, "--replay-dir", t.path + "/replays"},
                                     t.path + "/verify.log");
    // Mid-run for certain: both gates' children run (and hang for two minutes).
    std::map<pid_t, std::string> before;
    int children = 0;
    for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(240);
         std::chrono::steady_clock::now() < until && children < 3;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      before = descendants(pid);
      children = 0;
      // The zygote and the gate children it cloned (which keep its command line).
      for (const auto& [p, start] : before) children += cmdline(p).find("gauntlet-worker --zygote") != std::string::npos;
    }
    ASSERT_GE(children, 3) << read_file(t.path + "/verify.log");
    before = descendants(pid);
    if (sig == SIGINT) kill(-pid, SIGINT);
    else kill(pid, sig);
    const int status = wait_for(pid, 30);
    const std::string log = read_file(t.path + "/verify.log");
    ASSERT_TRUE(status != -1 && WIFEXITED(status)) << log;
    EXPECT_EQ(WEXITSTATUS(status), 128 + sig) << log;
    EXPECT_EQ(count_lines_with(log, "interrupted by"), 1) << log;
    EXPECT_EQ(log.find("Traceback"), std::string::npos) << log;
    EXPECT_EQ(access(json.c_str(), F_OK), -1) << "a partial report was written";
    expect_no_survivors(before);
  }
}

// SIGKILL leaves gauntlet no chance to clean up: its gate children (PID 1 of their namespaces, so
// deaf to SIGTERM, and running as nobody, which clears a parent-death signal) must still go with
// it. Native and Python children alike.
TEST(Interrupt, KillingGauntletOutrightLeavesNoChildBehind) {
  REQUIRE_PYTHON_TORCH();
  if (geteuid() != 0) GTEST_SKIP() << "the privilege drop (root -> nobody) this test is about happens only under root";
  TempDir t;
  write_file(t.path + "/hang.py",
             "import torch, torch.nn as nn\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
             "        while True:\n            pass\n");
  struct Run {
    std::vector<std::string> args;
    std::string zygote;
  };
  for (const Run& r : {Run{{"verify", kCorpus + "/hostile/infinite_loop.json"}, "gauntlet-worker --zygote"},
                       Run{{"verify", "--op", "relu", "--kernel", t.path + "/hang.py", "--dtypes", "float32"},
                           "gauntlet_pyworker.py --zygote"}}) {
    std::vector<std::string> args = r.args;
    args.insert(args.end(), {"--gates", "contract,accuracy", "--jobs", "2", "--timeout", "120", "--seed", "1",
                             "--replay-dir", t.path + "/replays"});
    const pid_t pid = spawn_gauntlet(args, t.path + "/kill.log");
    // Until both gate children run as nobody, that is have entered their sandbox (a child killed
    // before its privilege drop still has the parent-death signal it was cloned with).
    std::map<pid_t, std::string> before;
    int sandboxed = 0;
    for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(240);
         std::chrono::steady_clock::now() < until && sandboxed < 2;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      before = descendants(pid);
      sandboxed = 0;
      for (const auto& [p, start] : before)
        sandboxed += cmdline(p).find(r.zygote) != std::string::npos && uid_of(p) == 65534;
    }
    ASSERT_GE(sandboxed, 2) << r.zygote << ": " << read_file(t.path + "/kill.log");
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // and into the kernel's loop
    before = descendants(pid);
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    expect_no_survivors(before);
    for (const auto& [p, start] : before) kill(p, SIGKILL);  // a survivor must not spin on after the test
  }
}
