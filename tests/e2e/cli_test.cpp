// End to end: the command line's contract — exit codes, JSON fields, one-line errors, limits, replays.
#include <gtest/gtest.h>
#include <functional>
#include <filesystem>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "e2e_util.h"
#include "gauntlet/audit/results_db.h"
#include "gauntlet/common/wire.h"
#include "gauntlet/sandbox/device_nodes.h"

using namespace gauntlet::e2e;

namespace {

const std::string kCorpus = GAUNTLET_SOURCE_DIR "/corpus";

std::string one_line(const std::string& s) {
  std::string t = s;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  return t;
}

TEST(Cli, ControlPassesWithTheSpecsJsonFields) {
  std::string dir = temp_dir();
  auto r = run_gauntlet({"verify", kCorpus + "/controls/softmax.json", "--seed", "11", "--json", dir + "/r.json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("seed 11"), std::string::npos) << "the seed is printed";
  auto j = nlohmann::json::parse(read_file(dir + "/r.json"));
  EXPECT_EQ(j["verdict"], "pass");
  EXPECT_EQ(j["seed"], 11);
  EXPECT_EQ(j["kernel_hash"].get<std::string>().size(), 64u);
  EXPECT_TRUE(j["environment"].contains("sandbox"));
  const std::vector<std::string> names = {"contract", "accuracy", "special-values", "subnormals", "shapes",
                                          "layouts", "determinism", "statelessness", "accumulation", "memory",
                                          "gradients", "provenance", "timing"};
  ASSERT_EQ(j["gates"].size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    const auto& g = j["gates"][i];
    EXPECT_EQ(g["name"], names[i]);
    for (const char* field : {"name", "status", "category", "message", "replay"}) EXPECT_TRUE(g.contains(field)) << field;
  }
  // The first eight gates and memory pass; every other gate passes or skips with its reason
  // (not applicable, such as gradients without a backward).
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string status = j["gates"][i]["status"];
    if (i < 8 || names[i] == "memory") {
      EXPECT_EQ(status, "pass") << names[i];
    } else {
      EXPECT_TRUE(status == "pass" || status == "skip") << names[i] << ": " << status;
      if (status == "skip") EXPECT_FALSE(j["gates"][i]["message"].get<std::string>().empty()) << names[i];
    }
  }
}

TEST(Cli, PlantedBugFailsWithAReplayFileAndItsCommand) {
  std::string dir = temp_dir();
  // A nested replay directory that does not exist yet (like the default gauntlet-out/replays).
  auto r = run_gauntlet({"verify", kCorpus + "/bugs/accuracy/layer_norm_eps_outside.json", "--seed", "3", "--json", dir + "/r.json",
                         "--replay-dir", dir + "/out/replays"});
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  auto j = nlohmann::json::parse(read_file(dir + "/r.json"));
  EXPECT_EQ(j["verdict"], "fail");
  EXPECT_EQ(j["gates"][1]["status"], "fail");
  EXPECT_EQ(j["gates"][1]["category"], "wrong-result");
  const std::string replay = j["gates"][1]["replay"];
  EXPECT_NE(r.out.find("replay: gauntlet replay " + replay), std::string::npos) << r.out;
  auto rj = nlohmann::json::parse(read_file(replay));
  EXPECT_EQ(rj["format"], "gauntlet-replay-v1");
  EXPECT_EQ(rj["gate"], "accuracy");
  EXPECT_EQ(rj["kernel"]["sha256"], j["kernel_hash"]);
  EXPECT_TRUE(rj["case"]["tensors"].is_array());
  EXPECT_EQ(rj["inputs_sha256"].get<std::string>().size(), 64u);
}

// One after another or in parallel (--jobs): the same seed gives the same verdicts and evidence.
TEST(Cli, SameSeedSameVerdictsAndEvidenceWhateverTheJobs) {
  std::string dir = temp_dir();
  auto a = run_gauntlet({"verify", kCorpus + "/bugs/accuracy/softmax_drop_small.json", "--seed", "99", "--json", dir + "/a.json",
                         "--quiet", "--jobs", "1"});
  auto b = run_gauntlet({"verify", kCorpus + "/bugs/accuracy/softmax_drop_small.json", "--seed", "99", "--json", dir + "/b.json",
                         "--quiet", "--jobs", "4"});
  EXPECT_EQ(a.exit_code, 1) << a.err;
  EXPECT_EQ(b.exit_code, 1) << b.err;
  auto ja = nlohmann::json::parse(read_file(dir + "/a.json")), jb = nlohmann::json::parse(read_file(dir + "/b.json"));
  ASSERT_EQ(ja["gates"].size(), 13u);
  ASSERT_EQ(jb["gates"].size(), 13u);
  for (size_t i = 0; i < ja["gates"].size(); ++i) {
    EXPECT_EQ(ja["gates"][i]["name"], jb["gates"][i]["name"]);
    EXPECT_EQ(ja["gates"][i]["status"], jb["gates"][i]["status"]);
    EXPECT_EQ(ja["gates"][i]["category"], jb["gates"][i]["category"]);
    EXPECT_EQ(ja["gates"][i]["message"], jb["gates"][i]["message"]);
  }
}

TEST(Cli, BadInputIsOneLineAndExitTwo) {
  std::string dir = temp_dir();
  write_file(dir + "/broken.json", "{\"op\": \"relu\", \"source\": ");
  write_file(dir + "/typo.json", "{\"op\": \"relu\", \"sorce\": \"relu.cpp\"}");
  write_file(dir + "/noop.json", "{\"op\": \"no_such_op\", \"source\": \"" + kCorpus + "/controls/relu.cpp\"}");
  write_file(dir + "/nofile.json", "{\"op\": \"relu\", \"source\": \"missing.cpp\"}");
  const std::vector<std::vector<std::string>> cases = {
      {"verify", dir + "/broken.json"},
      {"verify", dir + "/typo.json"},
      {"verify", dir + "/noop.json"},
      {"verify", dir + "/nofile.json"},
      {"verify", dir + "/does-not-exist.json"},
      {"verify", "--op", "relu", "--kernel", kCorpus + "/controls/relu.cpp", "--dtypes", "float17"},
      {"verify", "--op", "relu", "--kernel", kCorpus + "/controls/relu.cpp", "--memory-limit", "lots"},
      {"verify", "--op", "relu", "--kernel", kCorpus + "/controls/relu.cpp", "--attr", "nonsense"},
      {"verify", "--op", "relu", "--kernel", kCorpus + "/controls/relu.cpp", "--gates", "contract,speed"},
      {"verify", "--kernel", kCorpus + "/controls/relu.cpp"},
      {"frobnicate"},
  };
  for (const auto& args : cases) {
    auto r = run_gauntlet(args);
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    EXPECT_EQ(r.exit_code, 2) << joined << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find("error"), std::string::npos) << joined << r.err;
    EXPECT_EQ(one_line(r.err).find('\n'), std::string::npos) << joined << ": not one line: " << r.err;
  }
}

// Bad input that used to run anyway (a wrapped seed, a memory limit nothing loads under, an
// unusable replay folder) or to blame the kernel (a directory as its source): refused before
// anything runs, exit 2, one line naming the flag or the file (issue 17).
TEST(Cli, BadInputIsRefusedBeforeAnythingRunsAndNamed) {
  const std::string dir = temp_dir();
  const std::string relu = kCorpus + "/controls/relu.cpp";
  mkdir((dir + "/adir.json").c_str(), 0755);
  mkdir((dir + "/src.cpp").c_str(), 0755);
  write_file(dir + "/dir_source.json", "{\"op\": \"relu\", \"source\": \"src.cpp\"}");
  write_file(dir + "/plain", "not a folder");
  write_file(dir + "/badentry.json", "{\"op\": \"relu\", \"source\": \"" + relu + "\", \"entry\": \"my-forward\"}");
  write_file(dir + "/nul.json", "{\"op\": \"relu\", \"source\": \"" + relu + "\\u0000.bak\"}");
  write_file(dir + "/relu.json", "{\"op\": \"relu\", \"source\": \"" + relu + "\"}");
  write_file(dir + "/a.db", "");
  write_file(dir + "/binary.py", std::string("\x7f" "ELF\x02\x01\x01\x00\xff\xfe class ModelNew", 22));
  mkdir((dir + "/empty").c_str(), 0755);
  write_file(dir + "/empty.jsonl", "\n  \n");
  symlink((dir + "/a.db").c_str(), (dir + "/link.db").c_str());
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"verify", dir + "/adir.json"}, dir + "/adir.json: a directory"},
      {{"replay", dir + "/adir.json"}, "a directory, not a replay file"},
      {{"verify", dir + "/dir_source.json"}, "field 'source': " + dir + "/src.cpp: a directory"},
      {{"verify", "--op", "relu", "--kernel", dir + "/src.cpp"}, dir + "/src.cpp: a directory"},
      {{"verify", "--op", "relu", "--kernel", relu, "--seed", "-5"}, "'-5' is not a seed"},
      {{"verify", "--op", "relu", "--kernel", relu, "--seed", "18446744073709551616"}, "is not a seed"},
      {{"verify", "--op", "relu", "--kernel", relu, "--seed", "12abc"}, "'12abc' is not a seed"},
      {{"audit", kCorpus + "/controls/relu.json", "--seed", "-1", "--db", dir + "/audit-a.db"}, "'-1' is not a seed"},
      {{"verify", "--op", "relu", "--kernel", relu, "--memory-limit", "1"}, "--memory-limit 1 is below 128M"},
      {{"verify", "--op", "relu", "--kernel", relu, "--replay-dir", dir + "/plain"}, "--replay-dir " + dir + "/plain: not a directory"},
      {{"verify", "--op", "relu", "--kernel", relu, "--replay-dir", dir + "/plain/sub"}, dir + "/plain is not a directory"},
      {{"audit", kCorpus + "/controls/relu.json", "--replay-dir", dir + "/plain", "--db", dir + "/b.db"}, "--replay-dir"},
      {{"verify", dir + "/badentry.json"}, "field 'entry': 'my-forward' is not an entry name"},
      {{"verify", "--op", "relu", "--kernel", relu, "--entry", "for ward"}, "--entry 'for ward' is not an entry name"},
      {{"verify", dir + "/nul.json"}, "field 'source': contains a NUL byte"},
      {{"verify", dir + "/relu.json", "--op", "softmax"}, "--op softmax contradicts " + dir + "/relu.json's op 'relu'"},
      {{"verify", "--op", "relu", "--kernel", relu, "--dtypes", ""}, "--dtypes '' names no dtype"},
      {{"verify", "--op", "relu", "--kernel", relu, "--gates", ""}, "--gates: '' names no gate"},
      {{"audit", kCorpus + "/controls/relu.json", "--gates", " , ", "--db", dir + "/audit-a.db"}, "names no gate"},
      {{"audit", kCorpus + "/controls/relu.json", "--gpu-gate-jobs", "0", "--db", dir + "/audit-a.db"}, "--gpu-gate-jobs"},
      {{"merge", dir + "/./a.db", "-o", dir + "/a.db"}, "is also an input"},
      {{"merge", dir + "/link.db", "-o", dir + "/a.db"}, "is also an input"},
      {{"verify", dir + "/binary.py"}, dir + "/binary.py: not a Python module: not UTF-8 text"},
      {{"audit", dir + "/empty", "--db", dir + "/e1.db"}, dir + "/empty holds no kernel"},
      {{"audit", dir + "/empty.jsonl", "--db", dir + "/e2.db", "--work-dir", dir + "/w"}, dir + "/empty.jsonl holds no kernel"},
      {{"replay", kCorpus + "/../tests/data/no-such-replay.json", "--dump", dir + "/plain"}, "--dump " + dir + "/plain: not a directory"},
      {{"schemas", "lint", dir + "/missing-schema.json"}, "schemas lint: cannot read " + dir + "/missing-schema.json"},
  };
  for (const auto& [args, expected] : cases) {
    auto r = run_gauntlet(args);
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    EXPECT_EQ(r.exit_code, 2) << joined << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find(expected), std::string::npos) << joined << ": " << r.err;
    EXPECT_EQ(one_line(r.err).find('\n'), std::string::npos) << joined << ": not one line: " << r.err;
  }
  // Nothing was run for the audits: no database was made.
  EXPECT_FALSE(std::filesystem::exists(dir + "/audit-a.db"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/b.db"));
  // The largest seed, and a replay folder that does not exist yet, are fine.
  auto ok = run_gauntlet({"verify", "--op", "relu", "--kernel", relu, "--seed", "18446744073709551615", "--gates",
                          "contract", "--replay-dir", dir + "/new/replays", "--quiet"});
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_NE(ok.out.find("seed 18446744073709551615"), std::string::npos) << ok.out;
}

// A contract the op's schema cannot test (an attribute of the wrong kind, out of range or not a dim
// of the input; a dim limit below the schema's smallest size; attributes that break the schema's
// attr_constraints) is the manifest's field error, exit 2, before anything is built: it used to be
// a harness-error of every gate, charged to the run. A flag's value names the flag.
TEST(Cli, AContractItsSchemaCannotTestIsAFieldErrorBeforeAnythingRuns) {
  const std::string dir = temp_dir();
  const std::string amax = kCorpus + "/controls/amax.cpp", clamp = kCorpus + "/controls/clamp.cpp";
  auto manifest = [&](const std::string& name, const std::string& op, const std::string& src, const std::string& attrs,
                      const std::string& shapes) {
    write_file(dir + "/" + name, "{\"op\": \"" + op + "\", \"source\": \"" + src + "\", \"attrs\": " + attrs +
                                     ", \"shapes\": " + shapes + "}");
    return dir + "/" + name;
  };
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"verify", manifest("frac.json", "amax", amax, "{\"dim\": 1.5}", "{}")},
       dir + "/frac.json: field 'attrs/dim': 1.5 is not a whole number"},
      {{"verify", manifest("nodim.json", "amax", amax, "{\"dim\": 99}", "{}")},
       dir + "/nodim.json: field 'attrs/dim': 99 is no dim of x (its shapes: [M,N] or [B,M,N])"},
      {{"verify", manifest("below.json", "amax", amax, "{}", "{\"N\": {\"max\": 0}}")},
       dir + "/below.json: field 'shapes/N': max 0 is below op amax's smallest N, 1"},
      {{"verify", manifest("above.json", "amax", amax, "{}", "{\"M\": {\"min\": 70000}}")},
       dir + "/above.json: field 'shapes/M': min 70000 is above op amax's largest M, 65536"},
      {{"verify", manifest("crossed.json", "amax", amax, "{}", "{\"M\": {\"min\": 9, \"max\": 3}}")},
       dir + "/crossed.json: field 'shapes/M': min 9 is above max 3"},
      {{"verify", manifest("attr.json", "amax", amax, "{\"dimm\": 1}", "{}")},
       dir + "/attr.json: field 'attrs/dimm': op amax has no attribute 'dimm' (it has dim)"},
      {{"verify", manifest("dim.json", "amax", amax, "{}", "{\"Q\": {\"max\": 4}}")},
       dir + "/dim.json: field 'shapes/Q': op amax has no dim 'Q' (it has B, M, N)"},
      {{"verify", manifest("op.json", "amaxx", amax, "{}", "{}")}, dir + "/op.json: field 'op': unknown op 'amaxx'"},
      {{"verify", manifest("order.json", "clamp", clamp, "{\"lo\": 1, \"hi\": 0}", "{}")},
       dir + "/order.json: field 'attrs': hi=0, lo=1 violates op clamp's attribute constraint 'lo <= hi'"},
      {{"verify", manifest("range.json", "clamp", clamp, "{\"lo\": 1e9}", "{}")},
       dir + "/range.json: field 'attrs/lo': 1000000000 is outside op clamp's range [-10000, 10000]"},
      {{"verify", manifest("boolean.json", "clamp", clamp, "{\"hi\": true}", "{}")},
       dir + "/boolean.json: field 'attrs/hi': true is a bool"},
      {{"verify", "--op", "amax", "--kernel", amax, "--attr", "dim=-4"}, "--attr dim: -4 is no dim of x"},
      {{"verify", dir + "/frac.json", "--attr", "dim=5"}, "--attr dim: 5 is no dim of x"},
      {{"audit", dir + "/nodim.json", "--db", dir + "/a.db"}, "field 'attrs/dim': 99 is no dim of x"},
  };
  for (const auto& [args, expected] : cases) {
    auto r = run_gauntlet(args);
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    EXPECT_NE(r.exit_code, 0) << joined << "\n" << r.out << r.err;
    EXPECT_NE((r.err + r.out).find(expected), std::string::npos) << joined << ": " << r.out << r.err;
    if (args[0] == "verify") {
      EXPECT_EQ(r.exit_code, 2) << joined << "\n" << r.err;
      EXPECT_EQ(one_line(r.err).find('\n'), std::string::npos) << joined << ": not one line: " << r.err;
      EXPECT_EQ(r.err.find("verifying"), std::string::npos) << joined << ": something ran: " << r.err;
    }
  }
  // `schemas lint` lints a kernel manifest as the contract it is, naming file and field.
  auto lint = run_gauntlet({"schemas", "lint", dir + "/nodim.json", dir + "/order.json", kCorpus + "/controls/amax.json"});
  EXPECT_EQ(lint.exit_code, 1) << lint.out << lint.err;
  EXPECT_NE(lint.out.find(dir + "/nodim.json: /attrs/dim: 99 is no dim of x"), std::string::npos) << lint.out;
  EXPECT_NE(lint.out.find(dir + "/order.json: /attrs: hi=0, lo=1 violates"), std::string::npos) << lint.out;
  EXPECT_NE(lint.out.find("0 schemas, 3 kernel manifests, 2 issues"), std::string::npos) << lint.out;
  // Controls: whole numbers for double attributes are those doubles, and a fixed dim that only the
  // 3-D shapes have draws only 3-D cases (it used to draw 2-D ones the oracle then rejected).
  auto whole = run_gauntlet({"verify", manifest("whole.json", "clamp", clamp, "{\"lo\": -1, \"hi\": 1}", "{}"),
                             "--gates", "contract,accuracy", "--quiet"});
  EXPECT_EQ(whole.exit_code, 0) << whole.out << whole.err;
  auto third = run_gauntlet({"verify", "--op", "amax", "--kernel", amax, "--attr", "dim=2", "--gates",
                             "contract,accuracy,shapes", "--quiet", "--json", dir + "/third.json"});
  EXPECT_EQ(third.exit_code, 0) << third.out << third.err;
  EXPECT_EQ(third.out.find("harness-error"), std::string::npos) << third.out;
}

// A replay file with a field of the wrong kind names the field; one whose case is larger than the
// machine is refused before any allocation (it used to try 8 PB and print C++ frames).
TEST(Cli, BrokenReplayFilesNameTheirFieldAndAllocateNothing) {
  const std::string dir = temp_dir();
  auto v = run_gauntlet({"verify", kCorpus + "/bugs/accuracy/softmax_drop_small.json", "--gates", "accuracy",
                         "--seed", "1", "--replay-dir", dir + "/replays", "--json", dir + "/r.json", "--quiet"});
  ASSERT_EQ(v.exit_code, 1) << v.out << v.err;
  const std::string replay = nlohmann::json::parse(read_file(dir + "/r.json"))["gates"][0]["replay"];
  const nlohmann::json good = nlohmann::json::parse(read_file(replay));
  auto broken = [&](const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = good;
    edit(j);
    write_file(dir + "/" + name, j.dump());
    return run_gauntlet({"replay", dir + "/" + name});
  };
  const std::vector<std::pair<RunResult, std::string>> cases = {
      {broken("tool.json", [](nlohmann::json& j) { j["tool_version"] = 5; }), "field 'tool_version': required string"},
      {broken("kernel.json", [](nlohmann::json& j) { j.erase("kernel"); }), "field 'kernel/sha256': required string"},
      {broken("case.json", [](nlohmann::json& j) { j["case"] = "x"; }), "field 'case': required object"},
      {broken("huge.json", [](nlohmann::json& j) { j["case"]["tensors"][0]["shape"] = {100000, 100000, 100000}; }),
       "MiB, more than this machine's"},
  };
  for (const auto& [r, expected] : cases) {
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find(expected), std::string::npos) << r.err;
    EXPECT_EQ(one_line(r.err).find('\n'), std::string::npos) << "not one line: " << r.err;
  }
}

// A CUDA kernel where no CUDA device is: one line saying so, exit 2 (nothing verified), never a
// build error charged to the kernel. On a GPU host the same rule is forced by GAUNTLET_NO_CUDA=1.
TEST(Cli, ACudaKernelWithoutADeviceIsSaidSoAndNotBlamed) {
  std::string why;
  const bool has_gpu = gauntlet::cuda_device_present(&why);
  if (has_gpu) setenv("GAUNTLET_NO_CUDA", "1", 1);
  auto r = run_gauntlet({"verify", kCorpus + "/controls_cuda/relu.json", "--quiet"});
  if (has_gpu) unsetenv("GAUNTLET_NO_CUDA");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("controls_cuda/relu.json: a CUDA kernel, and this machine cannot run it"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nothing was verified"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("build-error"), std::string::npos) << r.out;
  EXPECT_EQ(one_line(r.err).find('\n'), std::string::npos) << "not one line: " << r.err;
}

// An op whose inputs need a dtype this LibTorch lacks (fp8_matmul's float8_e4m3fn before PyTorch
// 2.1, Debian's 1.13 among them): verify says so in one line and exits 2, selftest and audit skip
// the kernel with the reason; nothing is charged to the kernel. Where LibTorch has float8 the
// control is verified and passes.
TEST(Cli, AnOpWhoseDtypeThisLibTorchLacksIsSaidSoAndNotBlamed) {
  const std::string manifest = kCorpus + "/controls/fp8_matmul.json";
  auto r = run_gauntlet({"verify", manifest, "--quiet", "--seed", "1"});
  if (gauntlet::wire::dtype_unavailable(gauntlet::DType::Float8E4M3).empty()) {
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return;
  }
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("controls/fp8_matmul.json: fp8_matmul: input a is float8_e4m3fn, and this gauntlet's LibTorch "),
            std::string::npos) << r.err;
  EXPECT_NE(r.err.find("has no float8_e4m3fn (PyTorch 2.1 and later have it); nothing was verified"), std::string::npos) << r.err;
  EXPECT_EQ(one_line(r.err).find('\n'), std::string::npos) << "not one line: " << r.err;
  auto st = run_gauntlet({"selftest", "--filter", "controls/fp8_matmul"});
  EXPECT_EQ(st.exit_code, 0) << st.out << st.err;
  EXPECT_NE(st.out.find("skipped: fp8_matmul: input a is float8_e4m3fn"), std::string::npos) << st.out;
  EXPECT_NE(st.out.find(", 1 skipped (this machine cannot run them"), std::string::npos) << st.out;
  const std::string dir = temp_dir();
  auto audit = run_gauntlet({"audit", kCorpus + "/controls/fp8_matmul.json", "--db", dir + "/a.db"});
  EXPECT_NE(audit.out.find("1 kernels not verified: fp8_matmul: input a is float8_e4m3fn"), std::string::npos)
      << audit.out << audit.err;
}

TEST(Cli, ABuildErrorIsAVerdictWithTheCompilersLines) {
  std::string dir = temp_dir();
  write_file(dir + "/bad.cpp", "#include <torch/torch.h>\ntorch::Tensor forward(torch::Tensor x) { return x.no_such_method(); }\n");
  auto r = run_gauntlet({"verify", "--op", "relu", "--kernel", dir + "/bad.cpp", "--json", dir + "/r.json", "--quiet"});
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  auto j = nlohmann::json::parse(read_file(dir + "/r.json"));
  EXPECT_EQ(j["verdict"], "error");
  EXPECT_EQ(j["gates"][0]["category"], "build-error");
  EXPECT_NE(j["build"]["log_head"].get<std::string>().find("no_such_method"), std::string::npos);
  // The report above the gates quotes each of the compiler's error lines once (the first one used to
  // be printed twice: in the error line and again at the head of the log).
  write_file(dir + "/two.cpp", "#include <torch/torch.h>\ntorch::Tensor forward(torch::Tensor x) { int y = \"s\"; return x + undeclared_name; }\n");
  auto two = run_gauntlet({"verify", "--op", "relu", "--kernel", dir + "/two.cpp", "--gates", "contract"});
  ASSERT_EQ(two.exit_code, 1) << two.out << two.err;
  const std::string head = two.out.substr(0, two.out.find("  gate "));
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = head.find(what); at != std::string::npos; at = head.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("invalid conversion"), 1u) << head;
  EXPECT_EQ(count("undeclared_name"), 1u) << head;
}

TEST(Cli, TimeoutFlagBoundsAHungKernel) {
  auto r = run_gauntlet({"verify", kCorpus + "/hostile/infinite_loop.json", "--timeout", "2", "--gates", "contract", "--quiet"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("timeout"), std::string::npos) << r.out;
  EXPECT_LT(r.seconds, 20.0);
}

// Gates in parallel: a timeout beside other gates is rerun alone before it is reported, but once
// one has recurred alone the kernel has shown it hangs and the others stand without a rerun.
TEST(Cli, ParallelTimeoutsAreConfirmedAloneOnce) {
  std::string dir = temp_dir();
  auto r = run_gauntlet({"verify", kCorpus + "/hostile/infinite_loop.json", "--timeout", "2", "--jobs", "2", "--gates",
                         "contract,accuracy,special-values,layouts", "--json", dir + "/r.json", "--quiet"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto j = nlohmann::json::parse(read_file(dir + "/r.json"));
  int rerun = 0, stood = 0;
  for (const auto& g : j["gates"]) {
    EXPECT_EQ(g["category"], "timeout") << g.dump();
    const auto& e = g["evidence"]["rerun_alone"];
    rerun += e.is_boolean() && e.get<bool>();
    stood += e.is_string();
  }
  EXPECT_GE(rerun, 1);
  EXPECT_LE(rerun, 2);  // two gates may time out together before either is confirmed
  EXPECT_EQ(rerun + stood, 4);
}

TEST(Cli, MemoryLimitFlagCapsTheChild) {
  auto r = run_gauntlet({"verify", kCorpus + "/hostile/memory_exhaustion.json", "--memory-limit", "300M", "--gates", "contract", "--quiet"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("out-of-memory"), std::string::npos) << r.out;
}

TEST(Cli, ForkExecModeContainsCrashesToo) {
  auto crash = run_gauntlet({"verify", kCorpus + "/hostile/segfault.json", "--no-zygote", "--gates", "contract,accuracy", "--quiet"});
  EXPECT_EQ(crash.exit_code, 1);
  EXPECT_NE(crash.out.find("SIGSEGV"), std::string::npos) << crash.out;
  auto ok = run_gauntlet({"verify", kCorpus + "/controls/relu.json", "--no-zygote", "--quiet"});
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
}

TEST(Cli, CppExtensionSourceWithPybindBlockVerifiesWithoutPython) {
  std::string dir = temp_dir();
  write_file(dir + "/ext.cpp", R"(#include <torch/extension.h>
torch::Tensor relu_forward(torch::Tensor x) {
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);  // empty_like(x) would keep x's strides while the loop writes linearly
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "relu", [&] {
    const scalar_t* p = xc.data_ptr<scalar_t>();
    scalar_t* q = y.data_ptr<scalar_t>();
    for (int64_t i = 0; i < xc.numel(); ++i) q[i] = (p[i] > scalar_t(0) || p[i] != p[i]) ? p[i] : scalar_t(0);
  });
  return y;
}
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &relu_forward, "relu"); }
)");
  auto r = run_gauntlet({"verify", "--op", "relu", "--kernel", dir + "/ext.cpp", "--entry", "relu_forward", "--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST(Cli, SchemasListShowLint) {
  auto list = run_gauntlet({"schemas", "list"});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  for (const char* op : {"relu", "softmax", "conv2d", "sdpa", "cross_entropy", "segment_sum", "filter", "sort", "topk", "group_by_sum",
                         "scatter_add", "quantize_per_tensor", "dequantize", "int8_matmul", "unique", "hash_join", "fp8_matmul"})
    EXPECT_NE(list.out.find(op), std::string::npos) << op;
  auto lint = run_gauntlet({"schemas", "lint"});
  EXPECT_EQ(lint.exit_code, 0) << lint.out;
  EXPECT_NE(lint.out.find("33 schemas, 0 issues"), std::string::npos) << lint.out;
  std::string dir = temp_dir();
  auto text = read_file(GAUNTLET_SOURCE_DIR "/opschemas/softmax.json");
  auto j = nlohmann::json::parse(text);
  j["tolerance"]["float16"].erase("reason");
  write_file(dir + "/softmax.json", j.dump());
  auto bad = run_gauntlet({"schemas", "lint", dir + "/softmax.json"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.out.find(dir + "/softmax.json"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("/tolerance/float16"), std::string::npos) << bad.out;
  // A folder is linted as a folder of schemas (it was "invalid JSON").
  auto folder = run_gauntlet({"schemas", "lint", GAUNTLET_SOURCE_DIR "/opschemas"});
  EXPECT_EQ(folder.exit_code, 0) << folder.out << folder.err;
  EXPECT_NE(folder.out.find("33 schemas, 0 issues"), std::string::npos) << folder.out;
  auto bad_folder = run_gauntlet({"schemas", "lint", dir});
  EXPECT_EQ(bad_folder.exit_code, 1) << bad_folder.out << bad_folder.err;
  EXPECT_NE(bad_folder.out.find("/tolerance/float16"), std::string::npos) << bad_folder.out;
  auto show = run_gauntlet({"schemas", "show", "matmul"});
  EXPECT_EQ(show.exit_code, 0);
  EXPECT_NE(show.out.find("\"oracle\""), std::string::npos);
}

TEST(Cli, KernelBenchStyleCheckAcceptsAPlantedBug) {
  auto r = run_gauntlet({"kbcheck", kCorpus + "/bugs/accuracy/layer_norm_eps_outside.json"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("accept"), std::string::npos);
}

}  // namespace

namespace {

TEST(Replay, ReproducesVerdictAndOutputBytesInAFreshProcess) {
  std::string dir = temp_dir();
  auto r = run_gauntlet({"verify", kCorpus + "/bugs/accuracy/softmax_drop_small.json", "--seed", "5", "--json",
                         dir + "/r.json", "--replay-dir", dir + "/replays", "--quiet"});
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  auto j = nlohmann::json::parse(read_file(dir + "/r.json"));
  const std::string replay = j["gates"][1]["replay"];
  const std::string recorded = nlohmann::json::parse(read_file(replay))["outputs_sha256"];
  ASSERT_EQ(recorded.size(), 64u);
  auto rep = run_gauntlet({"replay", replay, "--dump", dir + "/dump"});
  EXPECT_EQ(rep.exit_code, 1) << rep.out << rep.err;
  EXPECT_NE(rep.out.find("outputs sha256: " + recorded), std::string::npos) << rep.out;
  EXPECT_NE(rep.out.find("reproduced: yes"), std::string::npos) << rep.out;
  EXPECT_FALSE(read_file(dir + "/dump/input_x.txt").empty());
  EXPECT_FALSE(read_file(dir + "/dump/expected_y.txt").empty());
  EXPECT_FALSE(read_file(dir + "/dump/actual_y.txt").empty());
}

TEST(Replay, CorruptOrMismatchedFilesAreClearErrors) {
  std::string dir = temp_dir();
  auto r = run_gauntlet({"verify", kCorpus + "/bugs/accuracy/softmax_drop_small.json", "--seed", "5", "--replay-dir",
                         dir + "/replays", "--quiet", "--gates", "accuracy"});
  ASSERT_EQ(r.exit_code, 1);
  // Find the one replay file written.
  std::string file;
  FILE* p = popen(("ls " + dir + "/replays/*.json").c_str(), "r");
  char buf[512] = {};
  ASSERT_TRUE(fgets(buf, sizeof buf, p));
  pclose(p);
  file = buf;
  file.erase(file.find_last_not_of("\n") + 1);
  auto j = nlohmann::json::parse(read_file(file));

  write_file(dir + "/truncated.json", read_file(file).substr(0, 200));
  auto t = run_gauntlet({"replay", dir + "/truncated.json"});
  EXPECT_EQ(t.exit_code, 2);
  EXPECT_NE(t.err.find("corrupt"), std::string::npos) << t.err;

  auto other_tool = j;
  other_tool["tool_version"] = "0.0.1";
  write_file(dir + "/tool.json", other_tool.dump());
  auto v = run_gauntlet({"replay", dir + "/tool.json"});
  EXPECT_EQ(v.exit_code, 2);
  EXPECT_NE(v.err.find("0.0.1"), std::string::npos) << v.err;

  auto other_kernel = j;
  other_kernel["kernel"]["sha256"] = std::string(64, '0');
  write_file(dir + "/kernel.json", other_kernel.dump());
  auto k = run_gauntlet({"replay", dir + "/kernel.json"});
  EXPECT_EQ(k.exit_code, 2);
  EXPECT_NE(k.err.find("changed"), std::string::npos) << k.err;

  auto bad_case = j;
  bad_case["case"]["tensors"][0]["dtype"] = "float17";
  write_file(dir + "/case.json", bad_case.dump());
  auto c = run_gauntlet({"replay", dir + "/case.json"});
  EXPECT_EQ(c.exit_code, 2);
  EXPECT_EQ(one_line(c.err).find('\n'), std::string::npos) << c.err;
}

}  // namespace

// A results database with a damaged page: `report` (and `merge`) say so and exit 2, never "0
// kernels" with exit 0 (the scan used to stop at the damage and pass for the end of the table).
// A results database of 400 kernels with one page of its kernels table overwritten (the page
// holding k200's row), as a bad disk would leave it.
std::string damaged_database(const std::string& dir) {
  const std::string db_path = dir + "/a.db";
  {
    std::string error;
    auto db = gauntlet::ResultsDb::open(db_path, &error);
    EXPECT_TRUE(db) << error;
    if (!db) return db_path;
    const nlohmann::json gates = nlohmann::json::array();
    for (int i = 0; i < 400; ++i) {
      const std::string h = "k" + std::to_string(i);
      nlohmann::json report = {{"verdict", "pass"}, {"op", "relu"}, {"kernel_hash", h}, {"seed", 1}, {"gates", gates},
                               {"padding", std::string(1500, 'x')}};  // many pages of kernels
      EXPECT_TRUE(db->put_kernel({h, "m", "0.1.0", 1}, {"k/" + h + ".json", "relu", "cpu", "pass", report, ""}, &error))
          << error;
    }
  }
  auto good = run_gauntlet({"report", db_path, "--json", dir + "/good.json"});
  EXPECT_EQ(good.exit_code, 0) << good.err;
  std::string bytes = read_file(db_path);
  const size_t row = bytes.find("k/k200.json");
  EXPECT_NE(row, std::string::npos);
  const size_t page = row / 4096 * 4096;
  EXPECT_GT(page, 0u);
  if (row == std::string::npos || page == 0) return db_path;
  std::fill(bytes.begin() + page, bytes.begin() + page + 4096, '\x55');
  write_file(db_path, bytes);
  return db_path;
}

TEST(Cli, ReportOnADamagedDatabaseSaysSoAndExitsTwo) {
  const std::string dir = temp_dir();
  const std::string db_path = damaged_database(dir);
  for (const std::vector<std::string>& args : {std::vector<std::string>{"report", db_path, "--json", "-"},
                                               std::vector<std::string>{"report", db_path, "-o", dir + "/r.html"}}) {
    auto r = run_gauntlet(args);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("damaged"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("a.db"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

// An audit or a merge into a damaged database says so in one line before anything runs (it used
// to start, print a blank line and one failed write per lane, then "rerun to continue", which could
// not help), and leaves the file as it was.
TEST(Cli, AnAuditOrMergeIntoADamagedDatabaseSaysSoOnceBeforeAnythingRuns) {
  const std::string dir = temp_dir();
  const std::string db_path = damaged_database(dir);
  const std::string before = read_file(db_path);
  write_file(dir + "/other.db", "");
  {
    std::string error;
    ASSERT_TRUE(gauntlet::ResultsDb::open(dir + "/other.db", &error)) << error;
  }
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"audit", kCorpus + "/controls/relu.json", "--db", db_path, "--gates", "contract"},
        std::vector<std::string>{"merge", dir + "/other.db", "-o", db_path}}) {
    auto r = run_gauntlet(args);
    EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << r.out << r.err;
    EXPECT_EQ(r.err.rfind("gauntlet: error: " + db_path + ": the database is damaged (", 0), 0u) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find(".recover may save its rows"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("rerun"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args[0] << ": " << r.err;
    EXPECT_EQ(r.out.find("verdicts"), std::string::npos) << r.out;
  }
  EXPECT_EQ(read_file(db_path), before);
}

// A merge with one damaged input fails before it writes: an output it would have made is not
// there, one that existed is byte for byte as it was (it used to keep the inputs before the bad one).
TEST(Cli, AFailedMergeLeavesNoPartialOutput) {
  const std::string dir = temp_dir();
  const std::string damaged = damaged_database(dir);
  const std::string good = dir + "/good.db", existing = dir + "/existing.db";
  {
    std::string error;
    auto db = gauntlet::ResultsDb::open(good, &error);
    ASSERT_TRUE(db) << error;
    ASSERT_TRUE(db->put_kernel({"g1", "m", "0.1.0", 1}, {"k/g1.json", "relu", "cpu", "pass", nlohmann::json::object(), ""}, &error));
    ASSERT_TRUE(gauntlet::ResultsDb::open(existing, &error)) << error;
  }
  const std::string before = read_file(existing);
  auto made = run_gauntlet({"merge", good, damaged, "-o", dir + "/new.db"});
  EXPECT_EQ(made.exit_code, 2) << made.out << made.err;
  EXPECT_NE(made.err.find(damaged + ": the database is damaged"), std::string::npos) << made.err;
  EXPECT_FALSE(std::filesystem::exists(dir + "/new.db"));
  auto into = run_gauntlet({"merge", good, damaged, "-o", existing});
  EXPECT_EQ(into.exit_code, 2) << into.out << into.err;
  EXPECT_EQ(read_file(existing), before);
  auto fine = run_gauntlet({"merge", good, "-o", dir + "/fine.db"});
  EXPECT_EQ(fine.exit_code, 0) << fine.out << fine.err;
  EXPECT_TRUE(std::filesystem::exists(dir + "/fine.db"));
}

// A --json that cannot be written (here: a directory of that name) fails with its name, exit 2,
// and leaves no temporary file beside it; the results stay in the database.
TEST(Cli, AnUnwritableJsonLeavesNoTemporaryFileBehind) {
  const std::string dir = temp_dir();
  const std::string json = dir + "/out.json";
  ASSERT_EQ(mkdir(json.c_str(), 0755), 0);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"audit", kCorpus + "/controls/relu.json", "--gates", "contract", "--db", dir + "/a.db",
                                 "--json", json, "--replay-dir", dir + "/replays"},
        std::vector<std::string>{"verify", kCorpus + "/controls/relu.json", "--gates", "contract", "--json", json,
                                 "--replay-dir", dir + "/replays", "--quiet"}}) {
    auto r = run_gauntlet(args);
    EXPECT_EQ(r.exit_code, 2) << args[0] << r.out << r.err;
    EXPECT_NE(r.err.find("cannot write " + json), std::string::npos) << r.err;
    for (const auto& e : std::filesystem::directory_iterator(dir))
      EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << "left behind: " << e.path();
  }
  EXPECT_EQ(db_scalar(dir + "/a.db", "SELECT count(*) FROM gates"), 1);
}

// A failing kernel leads with one cause line naming the smallest failing case's gate, scope and
// diagnosis, and the gates the same cause fails; an unsafe one exits 1, or 0 with --allow-unsafe.
TEST(Cli, AFailingKernelLeadsWithItsRootCauseAndUnsafeIsItsOwnVerdict) {
  auto r = run_gauntlet({"verify", kCorpus + "/bugs/accuracy/gelu_tanh_approx.json", "--seed", "1", "--gates",
                         "accuracy,special-values", "--quiet"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const std::string head = r.out.substr(0, r.out.find("  gate "));
  EXPECT_NE(head.find("  cause: in-contract, "), std::string::npos) << r.out;
  EXPECT_NE(head.find("gelu-tanh: the output is GELU's tanh approximation"), std::string::npos) << r.out;
  EXPECT_NE(head.find("(the same cause fails 2 gates: accuracy, special-values)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("verdict: FAIL"), std::string::npos) << r.out;

  auto u = run_gauntlet({"verify", kCorpus + "/contracts/matmul_square_unchecked.json", "--seed", "1", "--gates", "shapes"});
  EXPECT_EQ(u.exit_code, 1) << u.out << u.err;
  EXPECT_NE(u.out.find("  cause: out-of-contract, shapes"), std::string::npos) << u.out;
  EXPECT_NE(u.out.find("FAIL(out)"), std::string::npos) << u.out;
  EXPECT_NE(u.out.find("verdict: UNSAFE"), std::string::npos) << u.out;
  auto allowed = run_gauntlet({"verify", kCorpus + "/contracts/matmul_square_unchecked.json", "--seed", "1", "--gates",
                               "shapes", "--allow-unsafe", "--quiet"});
  EXPECT_EQ(allowed.exit_code, 0) << allowed.out << allowed.err;
}
