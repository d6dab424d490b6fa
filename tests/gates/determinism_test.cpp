// Tests of the determinism gate: byte-level comparison, and real runs on a control and planted bugs (threads, uninitialized memory).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "gauntlet/build/builder.h"
#include "gauntlet/cases/gate.h"
#include "real_run.h"

using namespace gauntlet;
using gauntlet::testing::CorpusKernelRun;

// gates/determinism.cpp has no header of its own (one file per gate): its testable pieces are
// declared here exactly as defined there.
namespace gauntlet::determinism_gate {
struct Difference {
  int64_t first = -1;
  int64_t count = 0;
};
Difference byte_difference(const at::Tensor& a, const at::Tensor& b);
std::string tolerance_difference(const std::string& oname, const at::Tensor& first, const at::Tensor& later,
                                 const at::Tensor& ref, const at::Tensor& scale, DType dtype, const Tolerance& tol,
                                 int64_t K, nlohmann::json* evidence);
}  // namespace gauntlet::determinism_gate

namespace {

namespace dg = gauntlet::determinism_gate;

TEST(DeterminismCompare, BytesDecideNanPayloadsAndSignedZeros) {
  const float quiet = std::nanf(""), payload = std::nanf("0x1234");
  uint32_t a, b;
  std::memcpy(&a, &quiet, 4);
  std::memcpy(&b, &payload, 4);
  ASSERT_NE(a, b);
  at::Tensor x = at::tensor({1.0f, quiet, 0.0f, 2.0f});
  EXPECT_EQ(dg::byte_difference(x, x.clone()).first, -1);
  // Another NaN payload is another result, though both are NaN.
  at::Tensor y = at::tensor({1.0f, payload, 0.0f, 2.0f});
  EXPECT_EQ(dg::byte_difference(x, y).first, 1);
  // -0.0 == 0.0 numerically, not in its bytes.
  at::Tensor z = at::tensor({1.0f, quiet, -0.0f, 2.5f});
  dg::Difference d = dg::byte_difference(x, z);
  EXPECT_EQ(d.first, 2);
  EXPECT_EQ(d.count, 2);
  // Half precision compares its own two bytes.
  EXPECT_EQ(dg::byte_difference(x.to(at::kHalf), z.to(at::kHalf)).count, 2);
}

// Declared bounded nondeterminism: a later run that differs from the first in its low bits, within
// the tolerance of the oracle and of the first run, passes; one beyond the bound of either fails,
// and NaN-ness must still match.
TEST(DeterminismCompare, ToleranceDifferenceJudgesAgainstTheOracleAndTheFirstRun) {
  Tolerance tol;
  tol.mode = "reduction";
  tol.ulps = 2;
  tol.c = 8;
  tol.ceiling_c = 1;
  tol.accumulator = "float32";
  // Four buckets of K = 1024 terms of total magnitude 1024 each: the bound is about
  // 8 * 2^-24 * 32 * 1024 = 0.0156 plus 2 ulps.
  const at::Tensor ref = at::tensor({10.0, -3.5, 0.0, 100.0}, at::kDouble);
  const at::Tensor scale = at::full({4}, 1024.0, at::kDouble);
  const at::Tensor first = at::tensor({10.0f, -3.5f, 0.0f, 100.0f});
  nlohmann::json ev;
  const at::Tensor near = at::tensor({10.001f, -3.5f, 0.0f, 99.995f});
  ASSERT_FALSE(dg::byte_difference(first, near).first < 0);
  EXPECT_EQ(dg::tolerance_difference("y", first, near, ref, scale, DType::Float32, tol, 1024, &ev), "");
  // Beyond the bound of the oracle.
  const at::Tensor far = at::tensor({10.5f, -3.5f, 0.0f, 100.0f});
  std::string why = dg::tolerance_difference("y", first, far, ref, scale, DType::Float32, tol, 1024, &ev);
  EXPECT_NE(why.find("against the oracle"), std::string::npos) << why;
  // Within the oracle's bound, yet the first run erred the other way by as much: beyond it of the first run.
  const at::Tensor low = at::tensor({9.99f, -3.5f, 0.0f, 100.0f}), high = at::tensor({10.01f, -3.5f, 0.0f, 100.0f});
  why = dg::tolerance_difference("y", low, high, ref, scale, DType::Float32, tol, 1024, &ev);
  EXPECT_NE(why.find("against the first call"), std::string::npos) << why;
  EXPECT_EQ(ev.value("against", ""), "the first call");
  // A NaN that comes and goes is never within a tolerance.
  const at::Tensor nan = at::tensor({10.0f, std::nanf(""), 0.0f, 100.0f});
  EXPECT_NE(dg::tolerance_difference("y", first, nan, ref, scale, DType::Float32, tol, 1024, &ev), "");
  // The first run itself is judged against the oracle alone.
  EXPECT_EQ(dg::tolerance_difference("y", at::Tensor(), near, ref, scale, DType::Float32, tol, 1024, &ev), "");
}

// A real gate run on a corpus kernel, in the sandbox.
struct RealRun : CorpusKernelRun {
  explicit RealRun(const std::string& rel_manifest, uint64_t seed = 7)
      : CorpusKernelRun(rel_manifest, seed, "determinism") {}
  GateVerdict run() { return make_gate("determinism")->run(*ctx); }
};

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

Case replayed_case(const GateVerdict& v) {
  std::ifstream in(v.replay);
  const nlohmann::json replay = nlohmann::json::parse(in);
  EXPECT_EQ(replay["gate"], "determinism");
  EXPECT_EQ(replay["outputs_sha256"], v.outputs_sha256);
  Case c;
  std::string error;
  EXPECT_TRUE(case_from_json(replay["case"], &c, &error)) << error;
  return c;
}

TEST(DeterminismGate, ControlPassesInBothProcesses) {
  RealRun r("controls/sum.json");
  GateVerdict v = r.run();
  EXPECT_EQ(v.status, Status::Pass) << v.message;
  EXPECT_GE(v.cases, 12);
  EXPECT_NE(v.message.find("0x5A and 2 threads"), std::string::npos) << v.message;
  // The two processes: the gate's first child and the differently poisoned second one.
  EXPECT_GE(r.ctx->timing.children, 2);
}

// Threads that add their partials in the order they finish, only on rows longer than anything the
// search draws: the race probe (one long row, many calls in one process) shows it, and its replay
// file makes check_one repeat the probe's calls.
TEST(DeterminismGate, ARaceOnLongRowsShowsInTheRaceProbe) {
  RealRun r("bugs/determinism/sum_cas_race.json");
  GateVerdict v = r.run();
  ASSERT_EQ(v.status, Status::Fail) << v.message;
  EXPECT_EQ(v.category, Category::WrongResult);
  EXPECT_NE(v.message.find("case race probe: "), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("in the same process differs from the first call"), std::string::npos) << v.message;
  Case c = replayed_case(v);
  EXPECT_GE(c.tensors[0].shape.back(), 65536);
  GateVerdict again = make_gate("determinism")->check_one(*r.ctx, c);
  EXPECT_EQ(again.status, Status::Fail) << again.message;
}

TEST(DeterminismGate, TheControlPassesTheRaceProbe) {
  RealRun r("controls/sum.json");
  GateVerdict v = r.run();
  ASSERT_EQ(v.status, Status::Pass) << v.message;
  ASSERT_TRUE(v.evidence.contains("race_probe")) << v.evidence.dump();
  EXPECT_EQ(v.evidence["race_probe"]["calls"], 17);
  EXPECT_NE(v.message.find("race probe: "), std::string::npos) << v.message;
}

TEST(DeterminismGate, ThreadCountDependentSumFailsOnALongEnoughReduction) {
  RealRun r("bugs/determinism/sum_split_k_threads.json");
  GateVerdict v = r.run();
  ASSERT_EQ(v.status, Status::Fail) << v.message;
  EXPECT_EQ(v.category, Category::WrongResult);
  EXPECT_NE(v.message.find("a fresh process (allocator poison 0x5A, 2 intra-op threads) differs"), std::string::npos)
      << v.message;
  Case c = replayed_case(v);
  // The kernel splits only reductions of at least 2 x 256 terms; shrinking keeps that and nothing else large.
  const int64_t rank = int64_t(c.tensors[0].shape.size());
  const int64_t d = (std::get<int64_t>(c.attrs.at("dim")) + rank) % rank;
  EXPECT_GE(c.tensors[0].shape[size_t(d)], 512) << v.message;
  int64_t numel = 1;
  for (int64_t s : c.tensors[0].shape) numel *= s;
  EXPECT_LE(numel, 64 * c.tensors[0].shape[size_t(d)]) << v.message;
  GateVerdict again = make_gate("determinism")->check_one(*r.ctx, c);
  EXPECT_EQ(again.status, Status::Fail) << again.message;
  EXPECT_EQ(again.outputs_sha256, v.outputs_sha256);
}

TEST(DeterminismGate, UninitializedAccumulatorFailsAtTheSmallestShape) {
  RealRun r("bugs/determinism/softmax_denominator_uninit.json");
  GateVerdict v = r.run();
  ASSERT_EQ(v.status, Status::Fail) << v.message;
  EXPECT_EQ(v.category, Category::WrongResult);
  Case c = replayed_case(v);
  // Every shape shows it: the search shrinks to a single element.
  for (int64_t s : c.tensors[0].shape) EXPECT_EQ(s, 1) << v.message;
  EXPECT_EQ(v.evidence.value("later", ""), "0") << v.evidence.dump();
  EXPECT_EQ(make_gate("determinism")->check_one(*r.ctx, c).status, Status::Fail);
}

// scatter_add declares "determinism": "tolerance": its control, whose threads add with CAS loops
// on float32 buckets in arrival order, passes within the tolerance. The same kernel under a copy
// of the schema that does not declare it (bitwise, every other schema's rule) fails: its runs
// really differ. And a kernel whose runs stay far outside the bound (float16 atomics) fails too.
TEST(DeterminismGate, DeclaredToleranceAdmitsArrivalOrderAndNothingElse) {
  RealRun ok("controls/scatter_add.json");
  ASSERT_EQ(ok.schema.determinism, "tolerance");
  GateVerdict v = ok.run();
  EXPECT_EQ(v.status, Status::Pass) << v.message;
  EXPECT_NE(v.message.find("within tolerance"), std::string::npos) << v.message;
  EXPECT_FALSE(v.evidence.contains("race_probe")) << "the race probe is a bitwise property";

  RealRun strict("controls/scatter_add.json");
  strict.schema.determinism = "bitwise";  // the gate context and the case space hold references
  GateVerdict bitwise = strict.run();
  ASSERT_EQ(bitwise.status, Status::Fail) << bitwise.message;
  EXPECT_EQ(bitwise.category, Category::WrongResult);
  EXPECT_NE(bitwise.message.find("the schema declares bitwise determinism"), std::string::npos) << bitwise.message;

  RealRun half("bugs/accumulation/scatter_add_half_atomics.json");
  GateVerdict h = half.run();
  ASSERT_EQ(h.status, Status::Fail) << h.message;
  EXPECT_NE(h.message.find("is outside the declared bound"), std::string::npos) << h.message;
}

}  // namespace
