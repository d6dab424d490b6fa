// gauntlet corpus, correct control: int8_matmul (SPEC's next ops).
// A reference-grade native CPU kernel (SPEC kernel form 1): plain loops over data_ptr after
// .contiguous(), the int8 products summed in int64 (exact, and int32 never overflows inside the
// contract), the sum times both scales in double and rounded once to float32; out-of-contract
// inputs rejected with TORCH_CHECK. Expected to pass every gate.
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

// int8_matmul(a [M,K] int8, b [K,N] int8, a_scale [1] float32, b_scale [N] float32):
// (a.int() @ b.int()).float() * a_scale * b_scale.
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
      int64_t acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += int64_t(pa[i * K + k]) * int64_t(pb[k * N + j]);
      TORCH_CHECK(acc >= std::numeric_limits<int32_t>::min() && acc <= std::numeric_limits<int32_t>::max(),
                  "int8_matmul: the int32 accumulation would overflow (K too large)");
      // Two double products (relative error 2^-53 each) then one rounding to float32: the oracle's
      // value as nearly as double allows, far inside the schema's 3 float32 ulps.
      y[i * N + j] = static_cast<float>(static_cast<double>(acc) * sa * static_cast<double>(sb[j]));
    }
  return out;
}
