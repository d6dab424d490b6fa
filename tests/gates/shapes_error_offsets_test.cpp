// The shapes gate's error inputs over an offsets input: segment_sum's offsets ending past or short of N.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gauntlet/cases/case.h"
#include "gauntlet/oracle/oracle.h"
#include "real_run.h"
#include "shapes_outside.h"  // the gate's cases outside the contract (gates/shapes_outside.cpp)

using namespace gauntlet;
using gauntlet::testing::CorpusKernelRun;

namespace {

namespace sg = gauntlet::shapes_gate;

std::vector<int64_t> values_of(const at::Tensor& t) {
  const at::Tensor c = t.contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

// A values override of kind "offsets" replaces the total: the offsets stay monotone from 0, so the
// only thing wrong with them is where they end (N + 1: past x's rows; N - 1: a row left over).
TEST(ShapesErrorInputs, OffsetsOverridesEndPastOrShortOfTheRows) {
  CorpusKernelRun r("controls/segment_sum.json", 7, "shapes");
  ASSERT_TRUE(r.ctx);
  std::vector<std::string> untested;
  const std::vector<Case> cases = sg::outside_cases(*r.ctx, "shapes", sg::sweep_budget(1), &untested);
  int past = 0, short_of = 0;
  for (const Case& c : cases) {
    const bool is_past = c.outside_contract.find("offsets ending past N") != std::string::npos;
    const bool is_short = c.outside_contract.find("offsets ending before N") != std::string::npos;
    if (!is_past && !is_short) continue;
    SCOPED_TRACE(c.label);
    const std::vector<at::Tensor> in = materialize_all(c);
    ASSERT_EQ(in.size(), 2u);
    const int64_t N = in[0].size(0);
    const std::vector<int64_t> o = values_of(in[1]);
    ASSERT_FALSE(o.empty());
    EXPECT_EQ(o.front(), 0);
    for (size_t s = 1; s < o.size(); ++s) EXPECT_GE(o[s], o[s - 1]) << "offsets stay monotone";
    // A single offset can only be 0 (draw_offsets): it ends short of N only for N >= 1.
    if (o.size() == 1) continue;
    EXPECT_EQ(o.back(), is_past ? N + 1 : N - 1);
    EXPECT_EQ(c.tensors[1].offsets, true);
    (is_past ? past : short_of) += 1;
    // The fp64 oracle agrees the case has no answer.
    EXPECT_FALSE(run_oracle("segment_sum", in, c.attrs).ok());
  }
  EXPECT_GE(past, 1);
  EXPECT_GE(short_of, 1);
  for (const std::string& u : untested) EXPECT_EQ(u.find("offsets"), std::string::npos) << u;
}

}  // namespace
