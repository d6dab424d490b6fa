// Tests of the layouts gate: its layout cases are non-contiguous views of the same values; real runs on controls and planted bugs.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "gauntlet/build/builder.h"
#include "gauntlet/cases/gate.h"
#include "gauntlet/common/wire.h"
#include "real_run.h"

using namespace gauntlet;
using gauntlet::testing::CorpusKernelRun;
using gauntlet::testing::load_test_schema;

// gates/layouts.cpp has no header of its own (one file per gate): its testable piece is declared
// here exactly as defined there.
namespace gauntlet::layouts_gate {
std::vector<std::string> effective_layouts(const InputSpec& in, const std::vector<int64_t>& shape,
                                           const std::string& structure = "");
}  // namespace gauntlet::layouts_gate

namespace {

bool bytes_equal(const at::Tensor& a, const at::Tensor& b) {
  const at::Tensor x = a.contiguous(), y = b.contiguous();
  return x.sizes() == y.sizes() && x.scalar_type() == y.scalar_type() &&
         std::memcmp(x.data_ptr(), y.data_ptr(), size_t(x.numel() * x.element_size())) == 0;
}

// Every layout the gate calls effective, for every input of every required op, at a typical
// shape: the tensor handed to the kernel really is a non-contiguous view (or sits at a storage
// offset), and it holds the values of the contiguous tensor (for "expanded": of its first row,
// broadcast, which is what the gate's contiguous reference copies).
TEST(LayoutsCases, EffectiveLayoutsAreNonContiguousViewsOfTheSameValues) {
  int checked = 0;
  std::set<std::string> seen;
  for (const std::string& op : oracle_ids()) {
    OpSchema s = load_test_schema(op);
    // An op whose inputs need a dtype this LibTorch lacks (fp8_matmul before PyTorch 2.1) has no
    // tensors to lay out here.
    if (std::any_of(s.inputs.begin(), s.inputs.end(), [](const InputSpec& in) { return wire::none_available(in.dtypes); }))
      continue;
    // Untied values: a tied draw may hold one value everywhere (topk's all_equal spread), and an
    // expanded copy of it could not be told from it.
    for (InputSpec& in : s.inputs) in.values.ties.clear();
    KernelManifest m;
    CaseSpace space(s, m);
    Case c;
    std::string error;
    ASSERT_TRUE(space.typical_case(5, DType::Float32, Distribution::Normal, 11, &c, &error)) << op << ": " << error;
    for (size_t i = 0; i < c.tensors.size(); ++i) {
      const TensorRecipe contiguous = c.tensors[i];
      const at::Tensor logical = materialize(contiguous);
      ASSERT_TRUE(logical.is_contiguous());
      for (const std::string& layout : layouts_gate::effective_layouts(s.inputs[i], contiguous.shape)) {
        TensorRecipe r = contiguous;
        r.layout = layout;
        const at::Tensor t = materialize(r);
        SCOPED_TRACE(op + " " + r.name + " " + layout);
        EXPECT_EQ(t.sizes(), logical.sizes());
        if (layout == "offset") {
          EXPECT_GT(t.storage_offset(), 0);
        } else {
          EXPECT_FALSE(t.is_contiguous());
        }
        if (layout == "expanded") {
          EXPECT_EQ(t.stride(0), 0);
          EXPECT_TRUE(bytes_equal(t, logical.narrow(0, 0, 1).expand(logical.sizes())));
          EXPECT_FALSE(bytes_equal(t, logical)) << "the rows of an expanded tensor are all its first row";
        } else {
          EXPECT_TRUE(bytes_equal(t, logical));
        }
        if (layout == "channels_last") EXPECT_TRUE(t.is_contiguous(at::MemoryFormat::ChannelsLast));
        seen.insert(layout);
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 60);
  EXPECT_EQ(seen, (std::set<std::string>{"channels_last", "expanded", "offset", "strided", "transposed"}));
}

TEST(LayoutsCases, LayoutsThatChangeNothingAreNotOffered) {
  OpSchema s = load_test_schema("conv2d");
  const InputSpec& x = s.inputs[0];
  auto has = [](const std::vector<std::string>& v, const std::string& l) { return std::find(v.begin(), v.end(), l) != v.end(); };
  // [1,1,5,1]: transposing the last two dims of a width-1 image keeps contiguous strides, and one
  // channel has no channels-last order; a single batch element cannot be expanded.
  const auto small = layouts_gate::effective_layouts(x, {1, 1, 5, 1});
  EXPECT_FALSE(has(small, "transposed"));
  EXPECT_FALSE(has(small, "channels_last"));
  EXPECT_FALSE(has(small, "expanded"));
  EXPECT_TRUE(has(small, "strided"));
  const auto big = layouts_gate::effective_layouts(x, {2, 3, 5, 4});
  for (const char* l : {"transposed", "strided", "offset", "expanded", "channels_last"}) EXPECT_TRUE(has(big, l)) << l;
  // Only what the schema allows for that input: a bias has no transposed or channels-last form.
  const auto bias = layouts_gate::effective_layouts(s.inputs[2], {4});
  EXPECT_FALSE(has(bias, "transposed"));
  EXPECT_TRUE(has(bias, "strided"));
  EXPECT_FALSE(has(layouts_gate::effective_layouts(s.inputs[2], {1}), "strided"));
  // A structured matrix is never expanded along its rows (equal rows are not triangular); a batch
  // of them may be (each batch element keeps its structure).
  InputSpec matrix = x;
  matrix.layouts = {"contiguous", "transposed", "expanded"};
  EXPECT_TRUE(has(layouts_gate::effective_layouts(matrix, {4, 4}), "expanded"));
  EXPECT_FALSE(has(layouts_gate::effective_layouts(matrix, {4, 4}, "lower-triangular"), "expanded"));
  EXPECT_TRUE(has(layouts_gate::effective_layouts(matrix, {4, 4}, "lower-triangular"), "transposed"));
  EXPECT_TRUE(has(layouts_gate::effective_layouts(matrix, {3, 4, 4}, "symmetric"), "expanded"));
}

// A real gate run on a corpus kernel, in the sandbox.
struct RealRun : CorpusKernelRun {
  explicit RealRun(const std::string& rel_manifest, uint64_t seed = 7)
      : CorpusKernelRun(rel_manifest, seed, "layouts") {}
  GateVerdict run() { return make_gate("layouts")->run(*ctx); }
};

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

TEST(LayoutsGate, ControlPassesOverEveryLayoutItsSchemaAllows) {
  RealRun r("controls/conv2d.json");
  r.ctx->budget = 2;
  GateVerdict v = r.run();
  EXPECT_EQ(v.status, Status::Pass) << v.message;
  EXPECT_GE(v.cases, 80);
  for (const char* l : {"transposed", "strided", "offset", "expanded", "channels_last"})
    EXPECT_GE(v.evidence["layouts"].value(l, 0), 1) << l << ": " << v.message;
  // Inputs alone and all at once.
  EXPECT_GE(v.evidence.value("one_input_cases", 0), 5) << v.message;
  EXPECT_GE(v.evidence.value("all_inputs_cases", 0), 2) << v.message;
}

// The smallest failing case has a single non-contiguous input, and a replay of it reproduces the
// verdict and the output bytes.
void expect_shrunk_single_input(RealRun& r, const GateVerdict& v, const std::set<std::string>& culprits) {
  ASSERT_EQ(v.status, Status::Fail) << v.message;
  EXPECT_EQ(v.category, Category::WrongResult);
  ASSERT_FALSE(v.replay.empty());
  const nlohmann::json replay = read_json(v.replay);
  EXPECT_EQ(replay["gate"], "layouts");
  EXPECT_EQ(replay["outputs_sha256"], v.outputs_sha256);
  Case c;
  std::string error;
  ASSERT_TRUE(case_from_json(replay["case"], &c, &error)) << error;
  int non_contiguous = 0;
  int64_t elements = 0;
  for (const TensorRecipe& t : c.tensors) {
    if (t.layout != "contiguous") {
      ++non_contiguous;
      EXPECT_TRUE(culprits.count(t.name)) << t.name << " " << t.layout << ": " << v.message;
    }
    int64_t n = 1;
    for (int64_t s : t.shape) n *= s;
    elements += n;
  }
  EXPECT_EQ(non_contiguous, 1) << v.message;
  EXPECT_LE(elements, 16) << "not shrunk: " << v.message;
  EXPECT_GT(v.evidence.value("shrink_steps", 0), 0);
  GateVerdict again = make_gate("layouts")->check_one(*r.ctx, c);
  EXPECT_EQ(again.status, Status::Fail) << again.message;
  EXPECT_EQ(again.outputs_sha256, v.outputs_sha256);
  // The same values in contiguous tensors are right: the failure is the layout's.
  for (TensorRecipe& t : c.tensors) t.layout = "contiguous";
  EXPECT_EQ(make_gate("layouts")->check_one(*r.ctx, c).status, Status::Pass);
}

TEST(LayoutsGate, StrideBlindLayerNormFailsOnASmallSingleLayoutCase) {
  RealRun r("bugs/layouts/layer_norm_stride_blind.json");
  expect_shrunk_single_input(r, r.run(), {"x", "weight", "bias"});
}

TEST(LayoutsGate, RawWeightConvFailsOnlyThroughItsParameters) {
  // x is made contiguous by the kernel, so x alone never fails: the shrunk case blames w or b.
  RealRun r("bugs/layouts/conv2d_weight_raw.json");
  expect_shrunk_single_input(r, r.run(), {"w", "b"});
}

TEST(LayoutsGate, RowCopyEmbeddingFailsThroughItsTable) {
  RealRun r("bugs/layouts/embedding_memcpy_rows.json");
  expect_shrunk_single_input(r, r.run(), {"weight"});
}

}  // namespace
