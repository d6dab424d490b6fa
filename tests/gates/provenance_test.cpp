// Tests of the provenance gate: operator recording, forbidden library calls, input dependence, replay.
#include <gtest/gtest.h>

#include <fstream>

#include "real_run.h"

using namespace gauntlet;
using gauntlet::testing::CorpusKernelRun;

namespace {

bool has(const nlohmann::json& list, const std::string& s) {
  for (const auto& e : list)
    if (e == s) return true;
  return false;
}

// The failure's replay file, replayed through check_one in a fresh child, gives the same verdict
// and the same output bytes.
void expect_replays(CorpusKernelRun& r, const GateVerdict& v) {
  ASSERT_FALSE(v.replay.empty());
  std::ifstream in(v.replay);
  const nlohmann::json replay = nlohmann::json::parse(in);
  EXPECT_EQ(replay["gate"], "provenance");
  Case c;
  std::string error;
  ASSERT_TRUE(case_from_json(replay["case"], &c, &error)) << error;
  GateVerdict again = make_gate("provenance")->check_one(*r.ctx, c);
  EXPECT_EQ(again.status, Status::Fail) << again.message;
  EXPECT_EQ(again.message, v.message);
  EXPECT_EQ(again.outputs_sha256, v.outputs_sha256);
}

TEST(ProvenanceGate, ControlsPassAndTheirOperatorsAreListed) {
  for (const char* control : {"controls/sum.json", "controls/softmax.json", "controls/layer_norm.json",
                              "controls/embedding.json"}) {
    CorpusKernelRun r(control);
    GateVerdict v = make_gate("provenance")->run(*r.ctx);
    EXPECT_EQ(v.status, Status::Pass) << control << ": " << v.message;
    // The controls allocate their outputs with torch::empty: recorded, and not forbidden.
    EXPECT_TRUE(has(v.evidence["aten_ops"], "aten::empty")) << control << ": " << v.evidence.dump();
    EXPECT_GT(v.evidence.value("dependence_checks", 0), 0) << control;
  }
}

TEST(ProvenanceGate, LibraryCallIsRecordedAndFails) {
  CorpusKernelRun r("bugs/provenance/sum_library_call.json");
  GateVerdict v = make_gate("provenance")->run(*r.ctx);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.category, Category::WrongResult);
  EXPECT_NE(v.message.find("aten::sum"), std::string::npos) << v.message;
  EXPECT_TRUE(has(v.evidence["forbidden_ops_called"], "aten::sum")) << v.evidence.dump();
  expect_replays(r, v);
}

TEST(ProvenanceGate, HiddenLibraryFastPathFails) {
  CorpusKernelRun r("bugs/provenance/matmul_mm_fast_path.json");
  GateVerdict v = make_gate("provenance")->run(*r.ctx);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_NE(v.message.find("aten::mm"), std::string::npos) << v.message;
}

TEST(ProvenanceGate, ResultCachedOnPartOfTheInputFailsAndReplaysInOrder) {
  CorpusKernelRun r("bugs/provenance/softmax_cache_first_element.json");
  GateVerdict v = make_gate("provenance")->run(*r.ctx);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_NE(v.message.find("did not change"), std::string::npos) << v.message;
  EXPECT_TRUE(v.evidence.value("output_unchanged", false));
  // The replayed case alone would miss the cache; check_one runs its unperturbed base first.
  expect_replays(r, v);
}

}  // namespace
