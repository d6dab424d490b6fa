// Tests of the memory gate: ASan report parsing, and real runs on a control and planted bugs (canaries, poisons, ASan).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "gauntlet/build/builder.h"
#include "gauntlet/cases/gate.h"
#include "real_run.h"

using namespace gauntlet;
using gauntlet::testing::CorpusKernelRun;

// gates/memory.cpp has no header of its own (one file per gate): its testable pieces are declared
// here exactly as defined there.
namespace gauntlet::memory_gate {
struct AsanReport {
  bool found = false;
  std::string kind;
  std::string access;
  std::string where;
};
AsanReport parse_asan_report(const std::string& text);
std::string asan_runtime(const std::string& cxx);
}  // namespace gauntlet::memory_gate

namespace {

namespace mg = gauntlet::memory_gate;

TEST(MemoryAsanReport, ParsesKindAccessAndRegion) {
  // As read_capture_tail returns it: newlines turned into spaces.
  const std::string text =
      "=================================================================  ==1==ERROR: AddressSanitizer: "
      "heap-buffer-overflow on address 0x60b0000000ac at pc 0x7f pc 0x7f bp 0x7ff sp 0x7ff READ of size 4 at "
      "0x60b0000000ac thread T0     #0 0x7f  (/tmp/gauntlet-kernel.so+0x1234)  0x60b0000000ac is located 0 bytes to "
      "the right of 140-byte region [0x60b000000020,0x60b0000000ac) allocated by thread T0 here:";
  mg::AsanReport r = mg::parse_asan_report(text);
  ASSERT_TRUE(r.found);
  EXPECT_EQ(r.kind, "heap-buffer-overflow");
  EXPECT_EQ(r.access, "READ of size 4");
  EXPECT_EQ(r.where, "0 bytes to the right of 140-byte region");
  EXPECT_FALSE(mg::parse_asan_report("Segmentation fault (core dumped)").found);
  EXPECT_EQ(mg::parse_asan_report("==7==ERROR: AddressSanitizer: SEGV on unknown address").kind, "SEGV");
}

TEST(MemoryAsanReport, RuntimeIsAnAbsolutePathOrNothing) {
  const std::string rt = mg::asan_runtime("g++");
  if (!rt.empty()) EXPECT_EQ(rt[0], '/');
  EXPECT_EQ(mg::asan_runtime("/nonexistent/compiler"), "");
}

// The memory gate run on a corpus kernel, in the real sandbox.
struct MemoryRun : CorpusKernelRun {
  explicit MemoryRun(const std::string& rel_manifest) : CorpusKernelRun(rel_manifest, 11, "memory") {}
  std::unique_ptr<Gate> gate = make_gate("memory");

  GateVerdict run() { return gate->run(*ctx); }
  // The failing case from the replay file, checked again.
  GateVerdict replay(const GateVerdict& v) {
    std::ifstream in(v.replay);
    nlohmann::json j = nlohmann::json::parse(in);
    Case c;
    std::string error;
    EXPECT_TRUE(case_from_json(j["case"], &c, &error)) << error;
    return gate->check_one(*ctx, c);
  }
};

TEST(MemoryGate, ControlPasses) {
  MemoryRun r("controls/relu.json");
  GateVerdict v = r.run();
  EXPECT_EQ(v.status, Status::Pass) << v.message;
  EXPECT_NE(v.message.find("canaries"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("AddressSanitizer"), std::string::npos) << v.message;
  EXPECT_GT(v.cases, 3);
}

TEST(MemoryGate, WritePastOutputEndTripsTheCanary) {
  MemoryRun r("bugs/memory/relu_tail_store.json");
  GateVerdict v = r.run();
  EXPECT_EQ(v.status, Status::Fail) << v.message;
  EXPECT_EQ(v.category, Category::WrongResult);
  EXPECT_NE(v.message.find("write past the end of output 'y'"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("starting right at its end"), std::string::npos) << v.message;
  ASSERT_FALSE(v.replay.empty());
  GateVerdict again = r.replay(v);
  EXPECT_EQ(again.status, Status::Fail);
  EXPECT_EQ(again.message, v.message);
}

TEST(MemoryGate, InputModifiedInPlaceFails) {
  MemoryRun r("bugs/contract/relu_inplace.json");
  GateVerdict v = r.run();
  EXPECT_EQ(v.status, Status::Fail) << v.message;
  EXPECT_NE(v.message.find("input 'x' modified in place"), std::string::npos) << v.message;
}

TEST(MemoryGate, UninitializedAccumulatorDiffersBetweenPoisons) {
  MemoryRun r("bugs/determinism/softmax_denominator_uninit.json");
  GateVerdict v = r.run();
  EXPECT_EQ(v.status, Status::Fail) << v.message;
  EXPECT_NE(v.message.find("differ between allocator poisons 0xA5 and 0xFF"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("uninitialized memory"), std::string::npos) << v.message;
}

// Two children that differ, for a schema that allows differences within its tolerance: when
// gauntlet cannot judge them (here its oracle is unknown), that is a harness error, never a
// failure charged to the kernel.
TEST(MemoryGate, AToleranceItCannotJudgeIsAHarnessErrorNotTheKernels) {
  MemoryRun r("bugs/determinism/softmax_denominator_uninit.json");
  r.schema.determinism = "tolerance";
  r.schema.oracle = "no_such_oracle";
  GateVerdict v = r.run();
  EXPECT_EQ(v.status, Status::HarnessError) << v.message;
  EXPECT_EQ(v.category, Category::HarnessError);
  EXPECT_NE(v.message.find("could not judge them"), std::string::npos) << v.message;
}

TEST(MemoryGate, AsanFindsTheReadPastTheInput) {
  MemoryRun r("bugs/memory/rms_norm_staged_row.json");
  GateVerdict v = r.run();
  if (mg::asan_runtime(default_build_config().cxx).empty()) {
    // Without the sanitizer the read is invisible: the gate passes and says what it skipped.
    EXPECT_EQ(v.status, Status::Pass) << v.message;
    EXPECT_NE(v.message.find("AddressSanitizer sub-check skipped"), std::string::npos) << v.message;
    return;
  }
  EXPECT_EQ(v.status, Status::Fail) << v.message;
  EXPECT_EQ(v.category, Category::Crash);
  EXPECT_NE(v.message.find("AddressSanitizer: heap-buffer-overflow, READ of size"), std::string::npos) << v.message;
  GateVerdict again = r.replay(v);
  EXPECT_EQ(again.status, Status::Fail);
  EXPECT_EQ(again.message, v.message);
}

}  // namespace
