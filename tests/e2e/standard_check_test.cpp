// End to end: the field's standard check beside gauntlet's verdict — stored by `gauntlet audit`, kept
// through resume and merge, counted in the summary's 2x2 — and `gauntlet kbcheck` on hostile modules.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "../test_files.h"
#include "e2e_util.h"

using namespace gauntlet::e2e;

namespace {

const std::string kCorpus = GAUNTLET_SOURCE_DIR "/corpus";
const std::string kGates = "contract,accuracy,special-values";

struct TempDir {
  std::string path = temp_dir();
  ~TempDir() { gauntlet::testing::remove_tree(path); }
};

// Copies a corpus manifest and its source (the "source" it names, beside it) into dir.
void copy_kernel(const std::string& dir, const std::string& manifest) {
  const std::string name = manifest.substr(manifest.rfind('/') + 1), folder = manifest.substr(0, manifest.rfind('/') + 1);
  const nlohmann::json m = nlohmann::json::parse(read_file(kCorpus + "/" + manifest));
  write_file(dir + "/" + name, m.dump());
  const std::string source = m.value("source", "");
  write_file(dir + "/" + source, read_file(kCorpus + "/" + folder + source));
}

// A correct module the problem's own float32 Model gets wrong: each row sums two large cancelling
// values and a small one, which float32 loses and ModelNew (summing in float64) keeps. KernelBench's
// allclose against the float32 Model rejects it; gauntlet's float64 oracle passes it. So the 2x2's
// flagged cell (standard check rejects, gauntlet passes) holds a false alarm of the standard check.
const char* kExactSum = R"(import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.sum(x, dim=1)


class ModelNew(nn.Module):
    def forward(self, x):
        ones = torch.ones(x.shape[1], 1, dtype=torch.float64)
        return (x.double() @ ones).reshape(-1).to(x.dtype)


def get_inputs():
    x = torch.randn(16, 3)
    x[:, 0] = 1e8
    x[:, 2] = -1e8
    return [x]


def get_init_inputs():
    return []
)";

// entry -> the stored standard check, from an audit's --json records.
std::map<std::string, nlohmann::json> checks_of(const std::string& json_path) {
  std::map<std::string, nlohmann::json> out;
  for (const nlohmann::json& r : nlohmann::json::parse(read_file(json_path)))
    out[r.value("entry", "")] = r.value("standard_check", nlohmann::json());
  return out;
}

std::string row(const char* label, int pass, int unsafe, int fail) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "  %-18s %8d %8d %12d\n", label, pass, unsafe, fail);
  return buf;
}

}  // namespace

TEST(Audit, StandardCheckIsStoredBesideGauntletsVerdictAndCountedInTheSummary) {
  REQUIRE_PYTHON_TORCH();
  TempDir t;
  const std::string corpus = t.path + "/corpus";
  mkdir(corpus.c_str(), 0755);
  // Planted bugs that the standard check accepts (their manifests say so) and gauntlet fails,
  // controls both accept, a module bug KernelBench's check also accepts, one it rejects.
  const std::vector<std::string> bugs = {"bugs/special-values/relu_nan_to_zero.json", "bugs/accuracy/softmax_drop_small.json"};
  for (const std::string& b : bugs) {
    EXPECT_EQ(nlohmann::json::parse(read_file(kCorpus + "/" + b))["expect"].value("kbcheck", ""), "accept") << b;
    copy_kernel(corpus, b);
  }
  for (const char* k : {"controls/relu.json", "controls/softmax.json", "modules/rmsnorm_module.json",
                        "modules/softmax_half_sum.json", "modules/hardtanh_returns_input.json"})
    copy_kernel(corpus, k);
  write_file(corpus + "/exact_sum.py", kExactSum);
  const std::string db = t.path + "/a.db";
  auto audit = [&](const std::string& database, std::vector<std::string> extra) {
    std::vector<std::string> args = {"audit", corpus, "--db", database, "--gates", kGates, "--jobs", "2",
                                     "--replay-dir", t.path + "/replays", "--work-dir", t.path + "/work"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_gauntlet(args);
  };
  auto first = audit(db, {"--json", t.path + "/a.json"});
  ASSERT_EQ(first.exit_code, 1) << first.out << first.err;

  std::map<std::string, nlohmann::json> checks = checks_of(t.path + "/a.json");
  ASSERT_EQ(checks.size(), 8u) << first.out;
  const std::map<std::string, std::pair<std::string, std::string>> expected = {
      {"relu.json", {"accept", "kbcheck"}},
      {"softmax.json", {"accept", "kbcheck"}},
      {"relu_nan_to_zero.json", {"accept", "kbcheck"}},
      {"softmax_drop_small.json", {"accept", "kbcheck"}},
      {"rmsnorm_module.json", {"accept", "kernelbench"}},
      {"softmax_half_sum.json", {"accept", "kernelbench"}},
      {"hardtanh_returns_input.json", {"reject", "kernelbench"}},
      {"exact_sum.py", {"reject", "kernelbench"}},
  };
  for (const auto& [entry, want] : expected) {
    const nlohmann::json& c = checks[entry];
    ASSERT_TRUE(c.is_object()) << entry << ": no standard check stored\n" << first.out;
    EXPECT_EQ(c.value("verdict", ""), want.first) << entry << ": " << c.dump();
    EXPECT_EQ(c.value("check", ""), want.second) << entry;
    EXPECT_GT(c.value("seconds", 0.0), 0.0) << entry;
    // Its one child, a CPU one here (no CUDA hardware queues): what an audit's throughput counts.
    EXPECT_EQ(c.value("children", -1), 1) << entry << ": " << c.dump();
    EXPECT_EQ(c.value("hardware_queues", -1), 0) << entry;
  }
  EXPECT_NE(checks["exact_sum.py"].value("reason", "").find("allclose(atol=rtol=1e-2) fails"), std::string::npos);
  EXPECT_EQ(db_scalar(db, "SELECT count(*) FROM kernels WHERE standard_check IS NOT NULL"), 8);
  // The 2x2 (3x2 with unsafe): controls and the exact sum pass gauntlet, the four bugs fail it.
  EXPECT_NE(first.out.find("standard check against gauntlet (8 kernels;"), std::string::npos) << first.out;
  EXPECT_NE(first.out.find(row("standard accepts", 3, 0, 3)), std::string::npos) << first.out;
  EXPECT_NE(first.out.find(row("standard rejects", 1, 0, 1)), std::string::npos) << first.out;
  const size_t flagged = first.out.find("  FLAGGED exact_sum.py: trial 0: output mismatch");
  ASSERT_NE(flagged, std::string::npos) << first.out;
  EXPECT_LT(flagged, first.out.find("not passing (4):")) << first.out;

  // Resumed: nothing runs again, the stored checks are the same (their seconds too).
  auto again = audit(db, {"--json", t.path + "/again.json"});
  ASSERT_EQ(again.exit_code, 1) << again.out << again.err;
  EXPECT_NE(again.out.find("8 kernels were already complete"), std::string::npos) << again.out;
  EXPECT_EQ(again.out.find("had no standard check stored"), std::string::npos) << again.out;
  EXPECT_EQ(checks_of(t.path + "/again.json"), checks);

  // Without the check nothing is stored or shown; a later run with it runs the check alone.
  const std::string db2 = t.path + "/b.db";
  auto without = audit(db2, {"--no-standard-check"});
  ASSERT_EQ(without.exit_code, 1) << without.out << without.err;
  EXPECT_EQ(without.out.find("standard check"), std::string::npos) << without.out;
  EXPECT_EQ(db_scalar(db2, "SELECT count(*) FROM kernels WHERE standard_check IS NOT NULL"), 0);
  auto later = audit(db2, {"--json", t.path + "/b.json"});
  ASSERT_EQ(later.exit_code, 1) << later.out << later.err;
  EXPECT_NE(later.out.find("8 of them had no standard check stored: it ran for them alone"), std::string::npos) << later.out;
  EXPECT_EQ(db_scalar(db2, "SELECT count(*) FROM gates"), db_scalar(db, "SELECT count(*) FROM gates"));
  for (const auto& [entry, c] : checks_of(t.path + "/b.json"))
    EXPECT_EQ(c.value("verdict", ""), checks[entry].value("verdict", "")) << entry;

  // Merged into a database that lacks them, the checks come along.
  auto merged = run_gauntlet({"merge", db, "-o", t.path + "/merged.db"});
  ASSERT_EQ(merged.exit_code, 0) << merged.out << merged.err;
  EXPECT_EQ(db_scalar(t.path + "/merged.db", "SELECT count(*) FROM kernels WHERE standard_check IS NOT NULL"), 8);
}

// `gauntlet kbcheck FILE.py` runs KernelBench's check: each way a module can fail it says why, a
// hang ends at --timeout, and a module the check cannot judge (no Model) is bad input.
TEST(StandardCheck, KernelBenchCheckOfHostileModulesSaysWhy) {
  REQUIRE_PYTHON_TORCH();
  TempDir t;
  const std::string head = R"(import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(8, 64)]


class ModelNew(nn.Module):
    def forward(self, x):
)";
  const std::vector<std::tuple<std::string, std::string, int, std::string>> cases = {
      {"correct", "        return x.clamp_min(0)\n", 0, "accept: 5 trials of get_inputs() (seed 42) pass"},
      {"raises", "        raise RuntimeError('CUDA error: invalid argument')\n", 1,
       "reject: trial 0: ModelNew raised: RuntimeError: CUDA error: invalid argument"},
      {"reshaped", "        return x.clamp_min(0).reshape(-1)\n", 1,
       "reject: trial 0: output shape mismatch: expected [8, 64], got [512]"},
      {"hangs", "        while True:\n            pass\n", 1, "reject: KernelBench's trials: no reply within the 5 s"},
      {"no_model", "        return x\n", 2, "the module defines no Model"},
  };
  for (const auto& [name, body, exit_code, said] : cases) {
    std::string text = head + body;
    if (name == "no_model") text.replace(text.find("class Model("), 12, "class Other(");
    write_file(t.path + "/" + name + ".py", text);
    auto r = run_gauntlet({"kbcheck", t.path + "/" + name + ".py", "--timeout", "5"}, 120);
    EXPECT_EQ(r.exit_code, exit_code) << name << ": " << r.out << r.err;
    EXPECT_NE((r.out + r.err).find(said), std::string::npos) << name << ": " << r.out << r.err;
    if (exit_code == 2) EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
    if (name == "hangs") EXPECT_LT(r.seconds, 60) << "a hang costs --timeout, not the build's limit";
  }
}
