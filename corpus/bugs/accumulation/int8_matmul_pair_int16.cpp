// gauntlet corpus, planted bug: int8_matmul summing each pair of products in int16.
// The control (controls/int8_matmul.cpp) with the inner loop of a hand-vectorized int8 GEMM: the
// two products of k and k+1 are added in a 16-bit lane (as x86's VPMADDUBSW / ARM's SMLAL pairs
// do) before the pairs are summed in int32. A pair overflows int16 only when both products are
// 128 * 128 = 16384 (a and b both -128 at k and k+1): about once in 4e9 pairs of uniform int8
// data, so allclose at typical shapes never sees it; operands at the ends of their range do.
#include <torch/torch.h>

#include <cstdint>
#include <limits>

namespace {

void check_cpu(const torch::Tensor& t, at::ScalarType type, const char* what) {
  TORCH_CHECK(t.defined() && t.device().is_cpu() && t.layout() == at::kStrided, "int8_matmul: ", what,
              " must be a dense CPU tensor");
  TORCH_CHECK(t.scalar_type() == type, "int8_matmul: ", what, " has the wrong dtype");
}

}  // namespace

torch::Tensor forward(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& a_scale,
                      const torch::Tensor& b_scale) {
  check_cpu(a, at::kChar, "a");
  check_cpu(b, at::kChar, "b");
  check_cpu(a_scale, at::kFloat, "a_scale");
  check_cpu(b_scale, at::kFloat, "b_scale");
  TORCH_CHECK(a.dim() == 2 && b.dim() == 2, "int8_matmul: a and b must be 2-D");
  const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
  TORCH_CHECK(b.size(0) == K, "int8_matmul: b must have size(a, 1) rows");
  TORCH_CHECK(a_scale.numel() == 1, "int8_matmul: a_scale must hold one value");
  TORCH_CHECK(b_scale.dim() == 1 && b_scale.size(0) == N, "int8_matmul: b_scale must hold one value per column of b");
  const torch::Tensor ac = a.contiguous(), bc = b.contiguous(), sbc = b_scale.contiguous();
  const int8_t* pa = ac.data_ptr<int8_t>();
  const int8_t* pb = bc.data_ptr<int8_t>();
  const double sa = static_cast<double>(a_scale.contiguous().data_ptr<float>()[0]);
  const float* sb = sbc.data_ptr<float>();
  torch::Tensor out = torch::empty({M, N}, a_scale.options());
  float* y = out.data_ptr<float>();
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      int32_t acc = 0;
      int64_t k = 0;
      for (; k + 1 < K; k += 2) {
        // BUG: the pair's sum is held in int16 (wraps past 32767) before it reaches the int32 sum.
        const int16_t pair = static_cast<int16_t>(int32_t(pa[i * K + k]) * pb[k * N + j] +
                                                  int32_t(pa[i * K + k + 1]) * pb[(k + 1) * N + j]);
        acc += pair;
      }
      if (k < K) acc += int32_t(pa[i * K + k]) * pb[k * N + j];
      y[i * N + j] = static_cast<float>(static_cast<double>(acc) * sa * static_cast<double>(sb[j]));
    }
  return out;
}
