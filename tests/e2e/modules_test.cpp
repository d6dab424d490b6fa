// End to end: KernelBench-style plain-torch Python modules (corpus/modules, docs/modules.md) through
// the real binary and the Python worker: the correct softmax module passes, each planted bug fails
// at its gate. Skipped, with the reason, where python3 or its torch is missing.
#include <gtest/gtest.h>

#include <chrono>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <nlohmann/json.hpp>

#include "e2e_util.h"
#include "gauntlet/build/builder.h"

using namespace gauntlet;
using namespace gauntlet::e2e;

namespace {

const std::string kModules = source_dir() + "/corpus/modules";

nlohmann::json verify(const std::string& manifest, int* exit_code, std::string* log) {
  const std::string dir = temp_dir();
  auto r = run_gauntlet({"verify", kModules + "/" + manifest, "--seed", "1", "--json", dir + "/r.json", "--quiet"});
  *exit_code = r.exit_code;
  *log = r.out + r.err;
  return nlohmann::json::parse(read_file(dir + "/r.json"), nullptr, false);
}

// `verify --op relu` (float32, seed 1, the given gates) of a module written from `source`: its
// JSON report, parsed (not an object when verify wrote none; *r says why).
nlohmann::json verify_relu_source(const std::string& source, const std::string& gates, RunResult* r) {
  const std::string dir = temp_dir();
  write_file(dir + "/module.py", source);
  *r = run_gauntlet({"verify", "--op", "relu", "--kernel", dir + "/module.py", "--dtypes", "float32", "--gates", gates,
                     "--seed", "1", "--json", dir + "/r.json", "--quiet"});
  return nlohmann::json::parse(read_file(dir + "/r.json"), nullptr, false);
}

std::string gate_status(const nlohmann::json& j, const std::string& gate, std::string* message = nullptr) {
  for (const auto& g : j["gates"])
    if (g["name"] == gate) {
      if (message) *message = g["message"];
      return g["status"];
    }
  return "absent";
}

TEST(PythonModules, CorrectSoftmaxModulePasses) {
  REQUIRE_PYTHON_TORCH();
  int rc = -1;
  std::string log;
  const nlohmann::json j = verify("softmax_module.json", &rc, &log);
  ASSERT_TRUE(j.is_object()) << log;
  EXPECT_EQ(rc, 0) << j.dump(1);
  EXPECT_EQ(j["verdict"], "pass") << j.dump(1);
  EXPECT_EQ(j["environment"]["module"]["kind"], "python");
  EXPECT_EQ(j["environment"]["sandbox"]["launcher"], "zygote");  // the Python zygote
  const std::string isolation = j["environment"]["sandbox"]["isolation"];
  EXPECT_NE(isolation.find("python module worker"), std::string::npos) << isolation;
  EXPECT_NE(isolation.find("rlimits"), std::string::npos) << isolation;
  EXPECT_NE(isolation.find("seccomp"), std::string::npos) << isolation;
  for (const char* gate : {"contract", "accuracy", "special-values", "subnormals", "shapes", "layouts", "determinism",
                           "statelessness", "accumulation", "memory", "provenance"})
    EXPECT_EQ(gate_status(j, gate), "pass") << gate << ": " << j.dump(1);
  std::string msg;
  EXPECT_EQ(gate_status(j, "gradients", &msg), "skip");
  EXPECT_EQ(gate_status(j, "timing", &msg), "pass") << msg;  // against eager Model (module_timing_test.cpp)
  EXPECT_NE(msg.find("eager Model"), std::string::npos) << msg;
  EXPECT_EQ(j["kernel_hash"].get<std::string>().size(), 64u);
}

struct Bug {
  const char* manifest;
  std::vector<const char*> failing_gates;  // each must fail
};

class PythonModuleBug : public ::testing::TestWithParam<Bug> {};

TEST_P(PythonModuleBug, FailsAtItsGate) {
  REQUIRE_PYTHON_TORCH();
  int rc = -1;
  std::string log;
  const nlohmann::json j = verify(GetParam().manifest, &rc, &log);
  ASSERT_TRUE(j.is_object()) << log;
  EXPECT_EQ(rc, 1) << log;
  EXPECT_EQ(j["verdict"], "fail");
  for (const char* gate : GetParam().failing_gates) EXPECT_EQ(gate_status(j, gate), "fail") << gate << ": " << j.dump(1);
}

INSTANTIATE_TEST_SUITE_P(
    Modules, PythonModuleBug,
    ::testing::Values(Bug{"softmax_half_sum.json", {"accuracy", "accumulation"}},
                      Bug{"clamp_returns_input.json", {"accuracy", "provenance"}},
                      Bug{"softmax_cached.json", {"statelessness", "provenance"}},
                      Bug{"softmax_inplace_input.json", {"memory"}}),
    [](const ::testing::TestParamInfo<Bug>& info) {
      std::string n = info.param.manifest;
      n = n.substr(0, n.size() - 5);
      for (char& c : n)
        if (!isalnum((unsigned char)c)) c = '_';
      return n;
    });

// --no-zygote: each gate child is a fresh interpreter (fork+exec), with the same verdict.
TEST(PythonModules, NoZygoteForkExecsTheWorker) {
  REQUIRE_PYTHON_TORCH();
  const std::string dir = temp_dir();
  auto r = run_gauntlet({"verify", kModules + "/softmax_module.json", "--gates", "contract,memory", "--no-zygote",
                         "--seed", "1", "--json", dir + "/r.json", "--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const nlohmann::json j = nlohmann::json::parse(read_file(dir + "/r.json"), nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out << r.err;
  EXPECT_EQ(j["environment"]["sandbox"]["launcher"], "fork+exec");
  const std::string isolation = j["environment"]["sandbox"]["isolation"];
  EXPECT_NE(isolation.find("fork+exec (python module worker)"), std::string::npos) << isolation;
}

// A missing interpreter is a clear harness error, not a crash.
TEST(PythonModules, MissingInterpreterIsAHarnessError) {
  const std::string dir = temp_dir();
  setenv("GAUNTLET_PYTHON", "/nonexistent/python3", 1);
  auto r = run_gauntlet({"verify", kModules + "/softmax_module.json", "--gates", "contract", "--json", dir + "/r.json", "--quiet"});
  unsetenv("GAUNTLET_PYTHON");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  const nlohmann::json j = nlohmann::json::parse(read_file(dir + "/r.json"), nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out << r.err;
  std::string msg;
  EXPECT_EQ(gate_status(j, "contract", &msg), "harness-error");
  EXPECT_NE(msg.find("GAUNTLET_PYTHON"), std::string::npos) << msg;
}

// A module that forks, opens a socket or hangs is killed and categorized like a native kernel:
// the seccomp filter kills the first two (crash, SIGSYS), the wall clock the third (timeout).
TEST(PythonModules, HostileModulesAreKilledAndCategorized) {
  REQUIRE_PYTHON_TORCH();
  const std::string dir = temp_dir();
  const std::string head = "import os, socket, torch, torch.nn as nn\nclass ModelNew(nn.Module):\n    def forward(self, x):\n";
  struct Hostile {
    const char* name;
    const char* body;
    const char* category;
  };
  for (const Hostile& h : {Hostile{"fork", "        os.fork()\n        return x.clone()\n", "crash"},
                           Hostile{"socket", "        socket.socket()\n        return x.clone()\n", "crash"},
                           Hostile{"hang", "        while True:\n            pass\n", "timeout"}}) {
    const std::string src = dir + "/" + h.name + ".py";
    write_file(src, head + h.body);
    auto r = run_gauntlet({"verify", "--op", "relu", "--kernel", src, "--dtypes", "float32", "--gates", "contract",
                           "--timeout", "4", "--json", dir + "/" + h.name + ".json", "--quiet"});
    EXPECT_EQ(r.exit_code, 1) << h.name << r.out << r.err;
    const nlohmann::json j = nlohmann::json::parse(read_file(dir + "/" + h.name + ".json"), nullptr, false);
    ASSERT_TRUE(j.is_object()) << h.name << r.out << r.err;
    EXPECT_EQ(j["gates"][0]["status"], "error") << h.name;
    EXPECT_EQ(j["gates"][0]["category"], h.category) << h.name << ": " << j["gates"][0]["message"];
  }
}

// A module whose import never returns ends at --build-timeout, as a timeout of every gate (the
// load is the module's build, which has that limit, not --timeout), and the progress says the limit.
TEST(PythonModules, AnImportThatNeverReturnsEndsAtTheBuildTimeout) {
  REQUIRE_PYTHON_TORCH();
  const std::string dir = temp_dir();
  write_file(dir + "/stuck.py",
             "import torch, torch.nn as nn\nwhile True:\n    pass\n"
             "class ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n");
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run_gauntlet({"verify", "--op", "relu", "--kernel", dir + "/stuck.py", "--dtypes", "float32", "--gates",
                         "contract,accuracy", "--build-timeout", "3", "--json", dir + "/r.json"});
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_LT(took, 60.0);
  EXPECT_NE(r.err.find("at most 3 s, --build-timeout"), std::string::npos) << r.err;
  const nlohmann::json j = nlohmann::json::parse(read_file(dir + "/r.json"), nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out << r.err;
  for (const auto& g : j["gates"]) {
    EXPECT_EQ(g["category"], "timeout") << g.dump();
    EXPECT_NE(g["message"].get<std::string>().find("--build-timeout (3 s)"), std::string::npos) << g.dump();
  }
}

// --timeout bounds each case, not the gate's whole run: a correct module that takes 0.7 s a case
// passes a 14-case accuracy gate under --timeout 2 (10 s in all), and one that takes 5 s a case is
// still stopped at its first case.
TEST(PythonModules, TimeoutBoundsEachCaseNotTheWholeGate) {
  REQUIRE_PYTHON_TORCH();
  const std::string dir = temp_dir();
  auto module = [](const char* seconds) {
    return std::string("import time, torch, torch.nn as nn\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
                       "        time.sleep(") + seconds + ")\n        return torch.relu(x)\n";
  };
  write_file(dir + "/slow.py", module("0.7"));
  write_file(dir + "/slower.py", module("5"));
  auto slow = run_gauntlet({"verify", "--op", "relu", "--kernel", dir + "/slow.py", "--dtypes", "float32", "--gates",
                            "accuracy", "--timeout", "2", "--seed", "1", "--json", dir + "/slow.json", "--quiet"});
  EXPECT_EQ(slow.exit_code, 0) << slow.out << slow.err;
  const nlohmann::json s = nlohmann::json::parse(read_file(dir + "/slow.json"), nullptr, false);
  ASSERT_TRUE(s.is_object()) << slow.out << slow.err;
  EXPECT_EQ(s["gates"][0]["status"], "pass") << s["gates"][0].dump();
  EXPECT_GE(s["gates"][0]["cases"].get<int>() * 0.7, 4.0) << "the gate must outlast --timeout for the test to mean anything";
  auto slower = run_gauntlet({"verify", "--op", "relu", "--kernel", dir + "/slower.py", "--dtypes", "float32", "--gates",
                              "accuracy", "--timeout", "2", "--seed", "1", "--json", dir + "/slower.json", "--quiet"});
  EXPECT_EQ(slower.exit_code, 1) << slower.out << slower.err;
  const nlohmann::json t = nlohmann::json::parse(read_file(dir + "/slower.json"), nullptr, false);
  ASSERT_TRUE(t.is_object()) << slower.out << slower.err;
  EXPECT_EQ(t["gates"][0]["category"], "timeout") << t["gates"][0].dump();
}


// A crash is confirmed by running its deciding case once more, alone, in a fresh child. This
// module dies (SIGSEGV) on the third call a process makes, so the accuracy gate's child dies at its
// third case and the confirmation's child, which makes one call, does not: a crash that did not
// recur is a harness-error with both outcomes in its evidence, never charged to the kernel. A module
// that dies on every call is confirmed, and its crash stands.
TEST(PythonModules, ACrashThatDoesNotRecurAloneIsAHarnessErrorWithBothOutcomes) {
  REQUIRE_PYTHON_TORCH();
  const std::string dir = temp_dir();
  auto module = [](int crash_at) {
    // A real fault (a read of address 0): a kill() to itself would be ignored by the child, the
    // init of its own pid namespace.
    return "import ctypes, torch, torch.nn as nn\nCALLS = [0]\nclass ModelNew(nn.Module):\n"
           "    def forward(self, x):\n        CALLS[0] += 1\n        if CALLS[0] >= " +
           std::to_string(crash_at) + ":\n            ctypes.string_at(0)\n        return torch.relu(x)\n";
  };
  write_file(dir + "/third_call.py", module(3));
  write_file(dir + "/every_call.py", module(1));
  auto verify = [&](const std::string& name) {
    auto r = run_gauntlet({"verify", "--op", "relu", "--kernel", dir + "/" + name + ".py", "--dtypes", "float32", "--gates",
                           "accuracy", "--seed", "1", "--json", dir + "/" + name + ".json", "--quiet"});
    const nlohmann::json j = nlohmann::json::parse(read_file(dir + "/" + name + ".json"), nullptr, false);
    EXPECT_TRUE(j.is_object()) << r.out << r.err;
    return std::make_pair(r.exit_code, j.is_object() ? j["gates"][0] : nlohmann::json());
  };
  const auto [once_exit, once] = verify("third_call");
  EXPECT_EQ(once["status"], "harness-error") << once.dump();
  EXPECT_EQ(once["category"], "harness-error") << once.dump();
  EXPECT_NE(once["message"].get<std::string>().find("crash did not recur"), std::string::npos) << once.dump();
  EXPECT_EQ(once["evidence"]["first"]["category"], "crash") << once.dump();
  EXPECT_NE(once["evidence"]["first"]["message"].get<std::string>().find("SIGSEGV"), std::string::npos) << once.dump();
  EXPECT_EQ(once["evidence"]["again"]["status"], "pass") << once.dump();
  EXPECT_NE(once_exit, 1) << "a harness error is not the kernel's failure";

  const auto [every_exit, every] = verify("every_call");
  EXPECT_EQ(every_exit, 1);
  EXPECT_EQ(every["category"], "crash") << every.dump();
  EXPECT_TRUE(every["evidence"]["confirmed"].is_object()) << every.dump();
}
}  // namespace

namespace {

// A planted-bug module's failing gate leaves a replay file; `gauntlet replay` re-runs exactly that
// case in the Python worker and reproduces verdict and output digest (mapped and unmapped modules).
void expect_module_failure_replays(const std::string& manifest, const std::string& gate) {
  const std::string dir = temp_dir();
  auto r = run_gauntlet({"verify", kModules + "/" + manifest, "--seed", "1", "--gates", gate, "--json", dir + "/r.json",
                         "--replay-dir", dir + "/replays", "--quiet"});
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  const nlohmann::json j = nlohmann::json::parse(read_file(dir + "/r.json"));
  const std::string replay = j["gates"][0]["replay"];
  ASSERT_FALSE(replay.empty()) << j.dump(1);
  auto rep = run_gauntlet({"replay", replay});
  EXPECT_EQ(rep.exit_code, 1) << rep.out << rep.err;
  EXPECT_NE(rep.out.find("reproduced: yes"), std::string::npos) << rep.out << rep.err;
  EXPECT_NE(rep.out.find("verdict: fail wrong-result"), std::string::npos) << rep.out;
}

}  // namespace

TEST(PythonModules, ReplayReproducesAMappedModuleFailure) {
  REQUIRE_PYTHON_TORCH();
  expect_module_failure_replays("softmax_cached.json", "statelessness");
}

TEST(PythonModules, ReplayReproducesAnUnmappedModuleFailure) {
  REQUIRE_PYTHON_TORCH();  // op "module": the replay starts the module's own Model as the oracle
  expect_module_failure_replays("rmsnorm_half_sum.json", "accuracy");
}

// A determinism failure (a reduction order drawn per call) replays as reproduced: the verdict
// recurs, though a nondeterministic result's bytes do not. The same replay file with the race
// taken out of its embedded source is tried the full five times and reported as not reproduced.
TEST(PythonModules, DeterminismReplayRetriesAndSaysHowManyTries) {
  REQUIRE_PYTHON_TORCH();
  const std::string dir = temp_dir();
  auto r = run_gauntlet({"verify", kModules + "/rowsum_unordered.json", "--seed", "1", "--gates", "determinism",
                         "--json", dir + "/r.json", "--replay-dir", dir + "/replays", "--quiet"});
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  const std::string replay = nlohmann::json::parse(read_file(dir + "/r.json"))["gates"][0]["replay"];
  auto first = run_gauntlet({"replay", replay});
  EXPECT_EQ(first.exit_code, 1) << first.out << first.err;
  EXPECT_NE(first.out.find("tries: 1 of at most 5 (the failure showed on the last)"), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("reproduced: yes"), std::string::npos) << first.out;

  // The embedded source without its race, consistently hashed, at a path that does not exist.
  nlohmann::json j = nlohmann::json::parse(read_file(replay));
  std::string text = j["sources"]["kernel"]["text"];
  const std::string race = "        random.Random(os.urandom(8)).shuffle(order)";
  const size_t at = text.find(race);
  ASSERT_NE(at, std::string::npos) << text;
  text.erase(at, text.find('\n', at) + 1 - at);
  const std::string sha = sha256_hex(text);
  j["sources"]["kernel"]["text"] = text;
  j["sources"]["kernel"]["sha256"] = sha;
  j["sources"]["kernel"]["path"] = dir + "/gone/rowsum.py";
  j["kernel"]["sha256"] = sha;
  j["kernel"]["source"] = dir + "/gone/rowsum.py";
  j["kernel"]["manifest"] = dir + "/gone/rowsum.json";
  j["schema_sha256"] = sha;  // an unmapped module's schema is its source's
  const std::string calm = dir + "/calm.json";
  { std::ofstream(calm) << j.dump(); }
  auto again = run_gauntlet({"replay", calm});
  EXPECT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_NE(again.out.find("tries: 5 of at most 5 (the failure did not show)"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("reproduced: no"), std::string::npos) << again.out;
}

// A module that builds while it loads (load_inline): its load has the builder's limit, so a 3 s
// "build" passes under --timeout 2, and torch's build lock left stale by a killed builder does not
// block the next child (python/gauntlet_worker/loading.py, use_flock_baton).
TEST(PythonModules, ALoadThatBuildsHasTheBuildersLimitAndNoStaleLock) {
  REQUIRE_PYTHON_TORCH();
  const std::string dir = temp_dir();
  auto r = run_gauntlet({"verify", source_dir() + "/tests/data/modules/builds_while_loading.py", "--seed", "1",
                         "--gates", "contract,accuracy", "--timeout", "2", "--json", dir + "/r.json", "--quiet"});
  const nlohmann::json j = nlohmann::json::parse(read_file(dir + "/r.json"), nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out << r.err;
  EXPECT_EQ(r.exit_code, 0) << j.dump(1);
  std::string msg;
  EXPECT_EQ(gate_status(j, "contract", &msg), "pass") << msg;
  EXPECT_EQ(gate_status(j, "accuracy", &msg), "pass") << msg;
}

// Two poisoned children that disagree, with no element holding the poisons: the memory gate asks
// the first child again, and a module whose result varies from call to call (its reduction order
// drawn per call) is named nondeterministic, not a reader of uninitialized memory.
TEST(PythonModules, MemoryGateNamesNondeterminismRatherThanUninitializedMemory) {
  REQUIRE_PYTHON_TORCH();
  const std::string dir = temp_dir();
  auto r = run_gauntlet({"verify", source_dir() + "/corpus/modules/rowsum_unordered.json", "--seed", "1",
                         "--gates", "memory", "--json", dir + "/r.json", "--quiet"});
  const nlohmann::json j = nlohmann::json::parse(read_file(dir + "/r.json"), nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out << r.err;
  std::string msg;
  EXPECT_EQ(gate_status(j, "memory", &msg), "fail") << msg;
  EXPECT_NE(msg.find("varies from call to call (nondeterminism"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("depends on uninitialized memory"), std::string::npos) << msg;
}

// The memory gate's children poison new memory in the Python worker too (glibc M_PERTURB on the
// CPU): an output the module never wrote holds each child's poison, and the gate says so.
TEST(PythonModules, PoisonedChildrenShowAnOutputNeverWritten) {
  REQUIRE_PYTHON_TORCH();
  const std::string dir = temp_dir();
  auto r = run_gauntlet({"verify", source_dir() + "/tests/data/modules/returns_unwritten.py", "--seed", "1",
                         "--gates", "memory", "--json", dir + "/r.json", "--quiet"});
  const nlohmann::json j = nlohmann::json::parse(read_file(dir + "/r.json"), nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out << r.err;
  EXPECT_EQ(r.exit_code, 1) << j.dump(1);
  std::string msg;
  EXPECT_EQ(gate_status(j, "memory", &msg), "fail") << msg;
  // Every element holds each child's poison: both children really poisoned (glibc cannot give
  // 0xFF, so the CPU pair is 0xA5/0xFE; an unpoisoned child left zeros or stale bytes instead).
  EXPECT_NE(msg.find("1024 never written (they hold the poison bytes)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("poisons 0xA5 and 0xFE"), std::string::npos) << msg;
  const std::string isolation = j["environment"]["sandbox"]["isolation"];
  EXPECT_NE(isolation.find("heap-poison"), std::string::npos) << isolation;
}

// A Triton compile gives the GPU turn back (python/gauntlet_worker/turns.py): a stand-in for
// Triton's JITFunction whose compile step reports whether the worker held the turn during it. The
// module answers wrongly if it did, or if the turn was not taken again afterwards, so the gate
// fails whenever the pause is missing or the parent refuses the second request of one case.
TEST(PythonModules, ATritonCompileRunsWithoutTheGpuTurnAndTheCaseTakesItBack) {
  REQUIRE_PYTHON_TORCH();
  RunResult r;
  const nlohmann::json j = verify_relu_source(
             "import sys, types, torch, torch.nn as nn\n"
             "from gauntlet_worker import turns\n"
             "jit = types.ModuleType('triton.runtime.jit')\n"
             "class JITFunction:\n"
             "    def _do_compile(self, *args, **kwargs):\n"
             "        return turns.holding()\n"
             "jit.JITFunction = JITFunction\n"
             "sys.modules.update({'triton': types.ModuleType('triton'),\n"
             "                    'triton.runtime': types.ModuleType('triton.runtime'), 'triton.runtime.jit': jit})\n"
             "class ModelNew(nn.Module):\n"
             "    def forward(self, x):\n"
             "        held_while_compiling = JITFunction()._do_compile()\n"
             "        if held_while_compiling or not turns.holding():\n"
             "            return x + 1\n"
             "        return torch.relu(x)\n",
      "contract,accuracy", &r);
  ASSERT_TRUE(j.is_object()) << r.out << r.err;
  std::string msg;
  EXPECT_EQ(gate_status(j, "contract", &msg), "pass") << msg;
  EXPECT_EQ(gate_status(j, "accuracy", &msg), "pass") << msg;
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

// The GPU turn is asked for by the worker, before the module runs (wire.h
// CaseRequest::turn_handshake). A module that asks again from inside its forward, while the worker
// holds it, is a protocol violation of the child's, a crash charged to the module and confirmed in
// a fresh child.
TEST(PythonModules, AModuleThatAsksForTheGpuTurnItselfIsAProtocolViolation) {
  REQUIRE_PYTHON_TORCH();
  RunResult r;
  const nlohmann::json j = verify_relu_source(
             "import torch, torch.nn as nn\n"
             "from gauntlet_worker.wire import REPLY_FD, T_TURN_REQUEST, write_frame\n"
             "class ModelNew(nn.Module):\n"
             "    def forward(self, x):\n"
             "        write_frame(REPLY_FD, T_TURN_REQUEST, b'')\n"
             "        return torch.relu(x)\n",
      "contract", &r);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  ASSERT_TRUE(j.is_object()) << r.out << r.err;
  const nlohmann::json& g = j["gates"][0];
  EXPECT_EQ(g["status"], "error") << g.dump();
  EXPECT_EQ(g["category"], "crash") << g.dump();
  EXPECT_NE(g["message"].get<std::string>().find("asked for the GPU turn while holding it"), std::string::npos) << g.dump();
}
