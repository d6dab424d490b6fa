// gauntlet corpus, correct control: fp8_matmul (an e4m3 GEMM with scales; issue 20).
// A reference-grade native CPU kernel (SPEC kernel form 1): plain loops over the float8_e4m3fn
// bytes after .contiguous(), each byte decoded by hand (so it also compiles against a LibTorch
// without float8), products summed in double (exact: every e4m3 product is a multiple of 2^-18
// below 2^18), the sum times both scales in double and rounded once to float32; out-of-contract
// inputs rejected with TORCH_CHECK. Expected to pass every gate where LibTorch has float8_e4m3fn.
#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

namespace {

// float8_e4m3fn: sign, 4 exponent bits (bias 7), 3 fraction bits; S.1111.111 is NaN, no infinity.
double decode_e4m3(uint8_t bits) {
  const int exponent = (bits >> 3) & 0xF, fraction = bits & 0x7;
  double magnitude;
  if (exponent == 0xF && fraction == 0x7) magnitude = std::numeric_limits<double>::quiet_NaN();
  else if (exponent == 0) magnitude = std::ldexp(double(fraction), -9);  // subnormal: fraction * 2^-9
  else magnitude = std::ldexp(double(8 + fraction), exponent - 7 - 3);
  return (bits & 0x80) ? -magnitude : magnitude;
}

void check_cpu(const torch::Tensor& t, const char* what) {
  TORCH_CHECK(t.defined() && t.device().is_cpu() && t.layout() == at::kStrided, "fp8_matmul: ", what,
              " must be a dense CPU tensor");
}

void check_e4m3(const torch::Tensor& t, const char* what) {
  check_cpu(t, what);
  TORCH_CHECK(std::string(c10::toString(t.scalar_type())) == "Float8_e4m3fn", "fp8_matmul: ", what,
              " must be float8_e4m3fn");
}

}  // namespace

// fp8_matmul(a [M,K] e4m3, b [K,N] e4m3, a_scale [1] float32, b_scale [N] float32):
// (a.float() @ b.float()) * a_scale * b_scale.
torch::Tensor forward(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& a_scale,
                      const torch::Tensor& b_scale) {
  check_e4m3(a, "a");
  check_e4m3(b, "b");
  check_cpu(a_scale, "a_scale");
  check_cpu(b_scale, "b_scale");
  TORCH_CHECK(a_scale.scalar_type() == at::kFloat && b_scale.scalar_type() == at::kFloat,
              "fp8_matmul: the scales must be float32");
  TORCH_CHECK(a.dim() == 2 && b.dim() == 2, "fp8_matmul: a and b must be 2-D");
  const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
  TORCH_CHECK(b.size(0) == K, "fp8_matmul: b must have size(a, 1) rows");
  TORCH_CHECK(a_scale.numel() == 1, "fp8_matmul: a_scale must hold one value");
  TORCH_CHECK(b_scale.dim() == 1 && b_scale.size(0) == N, "fp8_matmul: b_scale must hold one value per column of b");
  const torch::Tensor ac = a.contiguous(), bc = b.contiguous(), sbc = b_scale.contiguous();
  const auto* pa = static_cast<const uint8_t*>(ac.data_ptr());
  const auto* pb = static_cast<const uint8_t*>(bc.data_ptr());
  const double sa = static_cast<double>(a_scale.contiguous().data_ptr<float>()[0]);
  const float* sb = sbc.data_ptr<float>();
  torch::Tensor out = torch::empty({M, N}, a_scale.options());
  float* y = out.data_ptr<float>();
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += decode_e4m3(pa[i * K + k]) * decode_e4m3(pb[k * N + j]);
      y[i * N + j] = static_cast<float>(acc * sa * static_cast<double>(sb[j]));
    }
  return out;
}
