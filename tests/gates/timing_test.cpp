// The timing gate in the real sandbox: controls pass with figures, both planted timing bugs fail, replay reproduces.
#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>
#include <future>
#include <thread>

#include "gauntlet/sandbox/gpu_turn.h"
#include "gauntlet/run/replay.h"
#include "gauntlet/common/timing.h"
#include "real_run.h"

namespace gauntlet {
namespace {

using testing::CorpusKernelRun;

TEST(TimingGate, ControlPassesWithBaselineRooflineAndFigures) {
  CorpusKernelRun r("controls/softmax.json", 5, "timing");
  GateVerdict v = make_gate("timing")->run(*r.ctx);
  ASSERT_EQ(v.status, Status::Pass) << v.message;
  ASSERT_TRUE(v.evidence.contains("dtypes"));
  const auto& d = v.evidence["dtypes"][0];
  EXPECT_EQ(d["timer"], "steady-clock");
  EXPECT_GE(d["candidate"]["n"].get<int>(), 10);
  EXPECT_GT(d["candidate"]["median_ms"].get<double>(), 0);
  EXPECT_LE(d["candidate"]["ci95_ms"][0].get<double>(), d["candidate"]["median_ms"].get<double>());
  EXPECT_GE(d["candidate"]["ci95_ms"][1].get<double>(), d["candidate"]["median_ms"].get<double>());
  EXPECT_EQ(d["baseline"]["name"], "ATen softmax");  // float32 softmax exists in every LibTorch
  EXPECT_GT(d["speedup"].get<double>(), 0);
  EXPECT_GT(d["peaks"]["copy_bytes_per_s"].get<double>(), 0);
  EXPECT_GT(d["roofline"]["utilization"].get<double>(), 0);
  EXPECT_GE(d["input_sets"].get<int>(), 2);  // rotation over distinct inputs
  EXPECT_NE(v.message.find("speedup"), std::string::npos) << v.message;
}

TEST(TimingGate, MemoizedResultIsImplausiblyFast) {
  CorpusKernelRun r("bugs/timing/relu_memo_by_fingerprint.json", 5, "timing");
  GateVerdict v = make_gate("timing")->run(*r.ctx);
  EXPECT_EQ(v.status, Status::Fail) << v.message;
  EXPECT_EQ(v.category, Category::WrongResult);
  EXPECT_NE(v.message.find("implausible"), std::string::npos) << v.message;
  EXPECT_FALSE(v.replay.empty());
}

TEST(TimingGate, HotPathWrongOnlyInTheTimedLoopIsCaughtByTheRecheck) {
  CorpusKernelRun r("bugs/timing/relu_tail_dropped_when_hot.json", 5, "timing");
  GateVerdict v = make_gate("timing")->run(*r.ctx);
  EXPECT_EQ(v.status, Status::Fail) << v.message;
  EXPECT_NE(v.message.find("differ from the same inputs' verified outputs"), std::string::npos) << v.message;
  // The same kernel is right in every untimed first call: the accuracy gate passes it.
  GateVerdict acc = make_gate("accuracy")->run(*r.ctx);
  EXPECT_EQ(acc.status, Status::Pass) << acc.message;
}

// A timing gate's run of `timed` after its sets were made ahead for `made_for` (Gate::prepare_ahead).
GateVerdict run_with_sets_made_for(const GateContext& made_for, GateContext& timed) {
  std::unique_ptr<Gate> gate = make_gate("timing");
  gate->prepare_ahead(made_for);
  return gate->run(timed);
}

// Timing's sets made ahead (Gate::prepare_ahead, gates/timing_ahead.h): the run takes every set
// from them and judges exactly as it does when it makes them itself.
TEST(TimingGate, SetsPreparedAheadAreTheOnesTimedAndJudgedTheSame) {
  CorpusKernelRun r("controls/softmax.json", 5, "timing");
  GateVerdict v = run_with_sets_made_for(*r.ctx, *r.ctx);
  ASSERT_EQ(v.status, Status::Pass) << v.message;
  const auto& d = v.evidence["dtypes"][0];
  EXPECT_EQ(d["prepared_ahead"]["sets"].get<int>(), d["input_sets"].get<int>()) << d.dump();
  EXPECT_GT(d["prepared_ahead"]["seconds"].get<double>(), 0) << d.dump();

  GateVerdict plain = make_gate("timing")->run(*r.ctx);
  ASSERT_EQ(plain.status, Status::Pass) << plain.message;
  EXPECT_EQ(plain.evidence["dtypes"][0]["prepared_ahead"]["sets"].get<int>(), 0);
  EXPECT_EQ(plain.evidence["dtypes"][0]["input_sets"], d["input_sets"]);
  EXPECT_EQ(plain.cases, v.cases);
}

// A preparation made for other cases (another seed: the same timed shapes and labels, other
// values) is never used: each set is taken only where its whole case is exactly the one timed, so
// a report of seed 5 never carries seed 6's inputs.
TEST(TimingGate, SetsPreparedForAnotherSeedAreNotUsed) {
  CorpusKernelRun r("controls/softmax.json", 5, "timing");
  GateContext other = *r.ctx;
  other.master_seed = 6;
  GateVerdict v = run_with_sets_made_for(other, *r.ctx);
  ASSERT_EQ(v.status, Status::Pass) << v.message;
  EXPECT_EQ(v.evidence["dtypes"][0]["prepared_ahead"]["sets"].get<int>(), 0) << v.evidence.dump();
}

// A planted wrong result that only the timing gate's untimed check at the timing shape sees still
// fails with its sets made ahead (the oracle made on the other thread is the one judged against).
TEST(TimingGate, AWrongResultIsCaughtWithTheSetsPreparedAhead) {
  CorpusKernelRun r("bugs/timing/relu_tail_dropped_when_hot.json", 5, "timing");
  GateVerdict v = run_with_sets_made_for(*r.ctx, *r.ctx);
  EXPECT_EQ(v.status, Status::Fail) << v.message;
  EXPECT_NE(v.message.find("differ from the same inputs' verified outputs"), std::string::npos) << v.message;
}

// A kernel that failed a correctness gate: timing skips, and the preparation still in flight is
// stopped and waited for when the gate goes (no thread outlives it).
TEST(TimingGate, APreparationLeftUnusedByASkipEndsWithTheGate) {
  CorpusKernelRun r("controls/relu.json", 5, "timing");
  {
    std::unique_ptr<Gate> gate = make_gate("timing");
    gate->prepare_ahead(*r.ctx);
    GateContext failed = *r.ctx;
    failed.earlier_failures = {"accuracy"};
    EXPECT_EQ(gate->run(failed).status, Status::Skip);
  }
  GateVerdict v = make_gate("timing")->run(*r.ctx);  // the same kernel, after the gate above is gone
  EXPECT_EQ(v.status, Status::Pass) << v.message;
}

TEST(TimingGate, SkipsAfterAnEarlierGateFailed) {
  CorpusKernelRun r("controls/relu.json", 5, "timing");
  r.ctx->earlier_failures = {"accuracy", "memory"};
  GateVerdict v = make_gate("timing")->run(*r.ctx);
  EXPECT_EQ(v.status, Status::Skip);
  EXPECT_NE(v.message.find("accuracy, memory"), std::string::npos) << v.message;
}

// A child past its GPU turn's bound (gpu_turn.h) still running on the device when the timed loop
// takes it: the figures are the kernel's plus a time-sliced share, so the gate says so and still
// passes (sharing only adds time); the same run on a device to itself says nothing. A fake
// device's lock file stands for the GPU, as in tests/sandbox/gpu_turn_test.cpp.
TEST(TimingGate, ATimedLoopBesideAnOverrunningChildIsReportedUncertainNotFailed) {
  const std::string lock = "/tmp/gauntlet-test-timing-shared-" + std::to_string(getpid()) + ".lock";
  SandboxOptions fake_gpu;
  fake_gpu.fake_gpu_turn_lock = lock;  // the children take turns on it as CUDA children do
  CorpusKernelRun r("controls/relu.json", 5, "timing", fake_gpu);
  GateVerdict alone = make_gate("timing")->run(*r.ctx);
  ASSERT_EQ(alone.status, Status::Pass) << alone.message;
  EXPECT_FALSE(alone.evidence["dtypes"][0]["gpu_shared"].get<bool>());
  EXPECT_EQ(alone.message.find("GPU shared"), std::string::npos) << alone.message;

  std::thread spinner_side;
  {
    // Another kernel's request past its bound: it gave its turn up and runs on.
    std::promise<void> overran, done;
    spinner_side = std::thread([&] {
      GpuTurn spinning(lock);
      spinning.overrun();
      overran.set_value();
      done.get_future().wait();
    });
    overran.get_future().wait();
    GateVerdict shared = make_gate("timing")->run(*r.ctx);
    done.set_value();
    spinner_side.join();
    ASSERT_EQ(shared.status, Status::Pass) << shared.message;
    EXPECT_TRUE(shared.evidence["dtypes"][0]["gpu_shared"].get<bool>());
    // Figures nobody can use are kept short: the loop's minimum, where alone the budget ran more.
    EXPECT_EQ(shared.evidence["dtypes"][0]["iterations"].get<int>(), int(wire::TimeRequest{}.min_iterations))
        << shared.evidence.dump(1);
    EXPECT_GT(alone.evidence["dtypes"][0]["iterations"].get<int>(), int(wire::TimeRequest{}.min_iterations));
    EXPECT_NE(shared.message.find("GPU shared"), std::string::npos) << shared.message;
    EXPECT_NE(shared.message.find("figures uncertain"), std::string::npos) << shared.message;
  }
  unlink(lock.c_str());
  unlink((lock + ".overrun").c_str());
}

// A timed run that holds its GPU turn past ten turn bounds (a correct kernel too slow at the
// timing size) gives the turn up like any overrunning request, so the other children of its GPU
// no longer wait for its whole --timeout; its own figures are then time-sliced, so uncertain,
// still a pass. Here the bound is 0.5 ms (a 5 ms timed run) on a fake device; the run above with
// the default bound (10 s for a timed run) kept its turn and said nothing.
TEST(TimingGate, ATimedRunPastTenTurnBoundsGivesItsTurnUpAndIsReportedUncertain) {
  const std::string lock = "/tmp/gauntlet-test-timing-own-overrun-" + std::to_string(getpid()) + ".lock";
  SandboxOptions fake_gpu;
  fake_gpu.fake_gpu_turn_lock = lock;
  fake_gpu.gpu_turn_bound_seconds = 0.0005;
  CorpusKernelRun r("controls/relu.json", 5, "timing", fake_gpu);
  const GpuTurn::Totals before = GpuTurn::process_totals();
  GateVerdict v = make_gate("timing")->run(*r.ctx);
  ASSERT_EQ(v.status, Status::Pass) << v.message;
  EXPECT_GT(GpuTurn::process_totals().overruns, before.overruns) << "the timed run kept its turn past its bound";
  EXPECT_TRUE(v.evidence["dtypes"][0]["gpu_shared"].get<bool>()) << v.evidence.dump(1);
  EXPECT_NE(v.message.find("figures uncertain"), std::string::npos) << v.message;
  unlink(lock.c_str());
  unlink((lock + ".overrun").c_str());
}

TEST(TimingGate, ReplayOfTheImplausibleCaseReproducesTheFailure) {
  CorpusKernelRun r("bugs/timing/relu_memo_by_fingerprint.json", 5, "timing");
  GateVerdict v = make_gate("timing")->run(*r.ctx);
  ASSERT_EQ(v.status, Status::Fail) << v.message;
  std::ifstream in(v.replay);
  nlohmann::json j = nlohmann::json::parse(in);
  Case c;
  std::string error;
  ASSERT_TRUE(case_from_json(j.at("case"), &c, &error)) << error;
  GateVerdict again = make_gate("timing")->check_one(*r.ctx, c);
  EXPECT_EQ(again.status, Status::Fail) << again.message;
  EXPECT_NE(again.message.find("implausible"), std::string::npos) << again.message;
}

// A correct kernel whose every other call is six times slower: the gate times the run again
// (kRetimes more) and reports it unsteady, still a pass (noise is not a wrong result).
TEST(TimingGate, AnUnsteadyRunIsTimedAgainAndReportedUnsteady) {
  CorpusKernelRun r(std::string(GAUNTLET_SOURCE_DIR) + "/tests/data/timing/relu_bimodal.json", 5, "timing");
  GateVerdict v = make_gate("timing")->run(*r.ctx);
  ASSERT_EQ(v.status, Status::Pass) << v.message;
  const auto& d = v.evidence["dtypes"][0];
  EXPECT_EQ(d["retimed_runs"].get<int>(), timing::kRetimes) << d.dump(1);
  EXPECT_TRUE(d["unsteady"].get<bool>()) << d.dump(1);
  EXPECT_NE(v.message.find("unsteady"), std::string::npos) << v.message;
}

}  // namespace
}  // namespace gauntlet
