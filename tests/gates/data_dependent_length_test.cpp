// A data-dependent output's length is a value: the statelessness and provenance gates, which leave a
// static shape unlike the oracle's to the contract gate, judge it (filter, issue 20).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "gauntlet/cases/gate.h"
#include "real_run.h"

using namespace gauntlet;
using gauntlet::testing::CorpusKernelRun;

namespace {

// A filter one element short whenever it keeps two or more: the last kept element is dropped, every
// value it returns right and in order, so only the length tells (the provenance gate's base cases).
constexpr const char* kShortFilter = R"(#include <torch/torch.h>
torch::Tensor forward(const torch::Tensor& x, double threshold) {
  TORCH_CHECK(x.dim() == 1 && x.device().is_cpu(), "filter: x must be a 1-D CPU tensor");
  const torch::Tensor xf = x.contiguous().to(torch::kDouble);
  const double* p = xf.data_ptr<double>();
  int64_t kept = 0;
  for (int64_t i = 0; i < xf.size(0); ++i) kept += p[i] > threshold;
  const int64_t n = kept >= 2 ? kept - 1 : kept;
  torch::Tensor out = torch::empty({n}, xf.options());
  double* y = out.data_ptr<double>();
  for (int64_t i = 0, k = 0; i < xf.size(0) && k < n; ++i)
    if (p[i] > threshold) y[k++] = p[i];
  return out.to(x.scalar_type());
}
)";

// A filter whose scratch buffer is sized by its first call's result and kept: a later call that
// keeps more is cut at that capacity. Right as the first call of a fresh process, so only a
// statelessness sequence that judges the length shows it.
constexpr const char* kFirstCallCapacity = R"(#include <torch/torch.h>
torch::Tensor forward(const torch::Tensor& x, double threshold) {
  TORCH_CHECK(x.dim() == 1 && x.device().is_cpu(), "filter: x must be a 1-D CPU tensor");
  const torch::Tensor xf = x.contiguous().to(torch::kDouble);
  const double* p = xf.data_ptr<double>();
  static torch::Tensor scratch;
  if (!scratch.defined()) {
    int64_t kept = 0;
    for (int64_t i = 0; i < xf.size(0); ++i) kept += p[i] > threshold;
    scratch = torch::empty({kept}, xf.options());
  }
  double* y = scratch.data_ptr<double>();
  int64_t k = 0;
  for (int64_t i = 0; i < xf.size(0) && k < scratch.size(0); ++i)
    if (p[i] > threshold) y[k++] = p[i];
  return scratch.narrow(0, 0, k).to(x.scalar_type(), false, true);
}
)";

std::string planted_dir() {
  char tmpl[] = "/tmp/gauntlet-ddlen-test-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  std::ofstream(dir + "/short.cpp") << kShortFilter;
  std::ofstream(dir + "/short.json") << R"({"op": "filter", "source": "short.cpp", "dtypes": ["float32"]})" << "\n";
  std::ofstream(dir + "/capacity.cpp") << kFirstCallCapacity;
  std::ofstream(dir + "/capacity.json") << R"({"op": "filter", "source": "capacity.cpp", "dtypes": ["float32"]})" << "\n";
  return dir;
}

TEST(DataDependentLength, StatelessnessAndProvenanceJudgeTheLength) {
  const std::string dir = planted_dir();
  for (const char* gate : {"statelessness", "provenance"}) {
    CorpusKernelRun r(dir + (gate == std::string("statelessness") ? "/capacity.json" : "/short.json"), 3, gate);
    ASSERT_TRUE(r.build.ok) << r.build.error;
    const GateVerdict v = make_gate(gate)->run(*r.ctx);
    EXPECT_EQ(v.status, Status::Fail) << gate << ": " << v.message;
    EXPECT_EQ(v.category, Category::WrongResult) << gate;
    EXPECT_NE(v.message.find("elements, expected"), std::string::npos) << gate << ": " << v.message;
  }
  // The same gates pass the control: the judging is no stricter than the oracle.
  for (const char* gate : {"statelessness", "provenance"}) {
    CorpusKernelRun r("controls/filter.json", 3, gate);
    const GateVerdict v = make_gate(gate)->run(*r.ctx);
    EXPECT_EQ(v.status, Status::Pass) << gate << ": " << v.message;
  }
  gauntlet::testing::remove_tree(dir);
}

}  // namespace
