// The accumulation gate catches a float16/bfloat16 running accumulator in every accumulating op family the issue names.
//
// Each kernel below is the plain loop a generated kernel writes, with its accumulator of type ACC_T.
// With ACC_T = scalar_t (the input's 16-bit dtype) it is the bug: correct in shape, dtype and
// layout, close enough on short random rows, and the gate must fail it in float16 and bfloat16.
// With ACC_T = float the same loop is a correct (sequential, float32-accumulating) kernel, and the
// gate must pass it: the failure is the accumulator's, and plain float summation is no false alarm.
// Products are formed in float (c10's Half*Half and BFloat16*BFloat16 round to 16 bits, which would
// be a second bug).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "real_run.h"

using namespace gauntlet;
using gauntlet::testing::CorpusKernelRun;

namespace {

const char* kPrelude = R"(#include <torch/torch.h>
#include <cmath>
#define HALF_ACC_DISPATCH(t, ...) AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, t, "half_acc", __VA_ARGS__)
static void last_dim_only(const torch::Tensor& x, int64_t dim) {
  TORCH_CHECK(x.dim() >= 1 && (dim == -1 || dim == x.dim() - 1), "this kernel reduces the last dim only");
}
)";

struct HalfKernel {
  std::string op, attrs, body;
};

std::vector<HalfKernel> kernels() {
  return {
      {"sum", R"({"dim": -1})", R"(torch::Tensor forward(const torch::Tensor& x0, int64_t dim) {
  last_dim_only(x0, dim);
  auto x = x0.contiguous();
  const int64_t K = x.size(-1), R = K ? x.numel() / K : 0;
  auto sizes = x.sizes().vec(); sizes.pop_back();
  auto y = torch::empty(sizes, x.options());
  HALF_ACC_DISPATCH(x.scalar_type(), [&] {
    const scalar_t* p = x.data_ptr<scalar_t>(); scalar_t* o = y.data_ptr<scalar_t>();
    for (int64_t r = 0; r < R; ++r) { ACC_T acc = 0; for (int64_t k = 0; k < K; ++k) acc = acc + p[r * K + k]; o[r] = acc; }
  });
  return y;
})"},
      {"mean", R"({"dim": -1})", R"(torch::Tensor forward(const torch::Tensor& x0, int64_t dim) {
  last_dim_only(x0, dim);
  auto x = x0.contiguous();
  const int64_t K = x.size(-1), R = K ? x.numel() / K : 0;
  auto sizes = x.sizes().vec(); sizes.pop_back();
  auto y = torch::empty(sizes, x.options());
  HALF_ACC_DISPATCH(x.scalar_type(), [&] {
    const scalar_t* p = x.data_ptr<scalar_t>(); scalar_t* o = y.data_ptr<scalar_t>();
    for (int64_t r = 0; r < R; ++r) { ACC_T acc = 0; for (int64_t k = 0; k < K; ++k) acc = acc + p[r * K + k]; o[r] = scalar_t(float(acc) / float(K)); }
  });
  return y;
})"},
      {"cumsum", R"({"dim": -1})", R"(torch::Tensor forward(const torch::Tensor& x0, int64_t dim) {
  last_dim_only(x0, dim);
  auto x = x0.contiguous();
  const int64_t K = x.size(-1), R = K ? x.numel() / K : 0;
  auto y = torch::empty(x.sizes(), x.options());
  HALF_ACC_DISPATCH(x.scalar_type(), [&] {
    const scalar_t* p = x.data_ptr<scalar_t>(); scalar_t* o = y.data_ptr<scalar_t>();
    for (int64_t r = 0; r < R; ++r) { ACC_T acc = 0; for (int64_t k = 0; k < K; ++k) { acc = acc + p[r * K + k]; o[r * K + k] = acc; } }
  });
  return y;
})"},
      {"matmul", "{}", R"(torch::Tensor forward(const torch::Tensor& a0, const torch::Tensor& b0) {
  TORCH_CHECK(a0.dim() == 2 && b0.dim() == 2 && a0.size(1) == b0.size(0), "matmul shapes");
  auto a = a0.contiguous(), b = b0.contiguous();
  const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
  auto y = torch::empty({M, N}, a.options());
  HALF_ACC_DISPATCH(a.scalar_type(), [&] {
    const scalar_t* pa = a.data_ptr<scalar_t>(); const scalar_t* pb = b.data_ptr<scalar_t>(); scalar_t* o = y.data_ptr<scalar_t>();
    for (int64_t i = 0; i < M; ++i) for (int64_t j = 0; j < N; ++j) {
      ACC_T acc = 0; for (int64_t k = 0; k < K; ++k) acc = acc + ACC_T(float(pa[i * K + k]) * float(pb[k * N + j])); o[i * N + j] = acc; }
  });
  return y;
})"},
      {"bmm", "{}", R"(torch::Tensor forward(const torch::Tensor& a0, const torch::Tensor& b0) {
  TORCH_CHECK(a0.dim() == 3 && b0.dim() == 3 && a0.size(0) == b0.size(0) && a0.size(2) == b0.size(1), "bmm shapes");
  auto a = a0.contiguous(), b = b0.contiguous();
  const int64_t B = a.size(0), M = a.size(1), K = a.size(2), N = b.size(2);
  auto y = torch::empty({B, M, N}, a.options());
  HALF_ACC_DISPATCH(a.scalar_type(), [&] {
    const scalar_t* pa = a.data_ptr<scalar_t>(); const scalar_t* pb = b.data_ptr<scalar_t>(); scalar_t* o = y.data_ptr<scalar_t>();
    for (int64_t z = 0; z < B; ++z) for (int64_t i = 0; i < M; ++i) for (int64_t j = 0; j < N; ++j) {
      ACC_T acc = 0; for (int64_t k = 0; k < K; ++k) acc = acc + ACC_T(float(pa[(z * M + i) * K + k]) * float(pb[(z * K + k) * N + j]));
      o[(z * M + i) * N + j] = acc; }
  });
  return y;
})"},
      {"softmax", R"({"dim": -1})", R"(torch::Tensor forward(const torch::Tensor& x0, int64_t dim) {
  last_dim_only(x0, dim);
  auto x = x0.contiguous();
  const int64_t K = x.size(-1), R = K ? x.numel() / K : 0;
  auto y = torch::empty(x.sizes(), x.options());
  HALF_ACC_DISPATCH(x.scalar_type(), [&] {
    const scalar_t* p = x.data_ptr<scalar_t>(); scalar_t* o = y.data_ptr<scalar_t>();
    for (int64_t r = 0; r < R; ++r) {
      float m = -INFINITY; for (int64_t k = 0; k < K; ++k) m = std::fmax(m, float(p[r * K + k]));
      ACC_T den = 0; for (int64_t k = 0; k < K; ++k) den = den + ACC_T(std::exp(float(p[r * K + k]) - m));
      for (int64_t k = 0; k < K; ++k) o[r * K + k] = scalar_t(std::exp(float(p[r * K + k]) - m) / float(den));
    }
  });
  return y;
})"},
      {"layer_norm", "{}", R"(torch::Tensor forward(const torch::Tensor& x0, const torch::Tensor& w0, const torch::Tensor& b0, double eps) {
  auto x = x0.contiguous(), w = w0.contiguous(), b = b0.contiguous();
  const int64_t D = x.size(-1), R = D ? x.numel() / D : 0;
  auto y = torch::empty(x.sizes(), x.options());
  HALF_ACC_DISPATCH(x.scalar_type(), [&] {
    const scalar_t* p = x.data_ptr<scalar_t>(); const scalar_t* pw = w.data_ptr<scalar_t>(); const scalar_t* pb = b.data_ptr<scalar_t>();
    scalar_t* o = y.data_ptr<scalar_t>();
    for (int64_t r = 0; r < R; ++r) {
      ACC_T s = 0; for (int64_t k = 0; k < D; ++k) s = s + p[r * D + k];
      const float mu = float(s) / float(D);
      ACC_T v = 0; for (int64_t k = 0; k < D; ++k) { const float c = float(p[r * D + k]) - mu; v = v + ACC_T(c * c); }
      const float rstd = 1.0f / std::sqrt(float(v) / float(D) + float(eps));
      for (int64_t k = 0; k < D; ++k) o[r * D + k] = scalar_t((float(p[r * D + k]) - mu) * rstd * float(pw[k]) + float(pb[k]));
    }
  });
  return y;
})"},
      {"rms_norm", "{}", R"(torch::Tensor forward(const torch::Tensor& x0, const torch::Tensor& w0, double eps) {
  auto x = x0.contiguous(), w = w0.contiguous();
  const int64_t D = x.size(-1), R = D ? x.numel() / D : 0;
  auto y = torch::empty(x.sizes(), x.options());
  HALF_ACC_DISPATCH(x.scalar_type(), [&] {
    const scalar_t* p = x.data_ptr<scalar_t>(); const scalar_t* pw = w.data_ptr<scalar_t>(); scalar_t* o = y.data_ptr<scalar_t>();
    for (int64_t r = 0; r < R; ++r) {
      ACC_T ss = 0; for (int64_t k = 0; k < D; ++k) ss = ss + ACC_T(float(p[r * D + k]) * float(p[r * D + k]));
      const float inv = 1.0f / std::sqrt(float(ss) / float(D) + float(eps));
      for (int64_t k = 0; k < D; ++k) o[r * D + k] = scalar_t(float(p[r * D + k]) * inv * float(pw[k]));
    }
  });
  return y;
})"},
  };
}

class HalfAccumulator : public ::testing::TestWithParam<HalfKernel> {};

TEST_P(HalfAccumulator, FailsTheGateWhereTheSameLoopInFloatPasses) {
  const HalfKernel& k = GetParam();
  char tmpl[] = "/tmp/gauntlet-half-acc-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  for (const char* acc : {"scalar_t", "float"}) {
    const bool half = std::string(acc) == "scalar_t";
    const std::string src = std::string(half ? "half" : "float") + ".cpp";
    std::ofstream(dir + "/" + src) << "#define ACC_T " << acc << "\n" << kPrelude << k.body << "\n";
    for (const char* dtype : {"float16", "bfloat16"}) {
      std::ofstream(dir + "/k.json") << R"({"op": ")" << k.op << R"(", "source": ")" << src << R"(", "dtypes": [")"
                                     << dtype << R"("], "attrs": )" << k.attrs << "}\n";
      CorpusKernelRun r(dir + "/k.json");
      ASSERT_TRUE(r.build.ok) << r.build.error;
      GateVerdict v = make_gate("accumulation")->run(*r.ctx);
      if (half) {
        EXPECT_EQ(v.status, Status::Fail) << k.op << " " << dtype << " accumulating in " << dtype << ": " << v.message;
        EXPECT_EQ(v.category, Category::WrongResult) << k.op << " " << dtype;
      } else {
        EXPECT_EQ(v.status, Status::Pass) << k.op << " " << dtype << " accumulating in float: " << v.message;
      }
    }
  }
  gauntlet::testing::remove_tree(dir);
}

INSTANTIATE_TEST_SUITE_P(AccumulationGate, HalfAccumulator, ::testing::ValuesIn(kernels()),
                         [](const ::testing::TestParamInfo<HalfKernel>& info) { return info.param.op; });

}  // namespace
