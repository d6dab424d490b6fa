// PLANTED BUG (subnormals): matmul that reads subnormal float32 operands as zero, as denormals-are-zero
// arithmetic does (CUDA's --use_fast_math, an x86 DAZ flag). On normal data (every typical and
// KernelBench shape) it is exact; a subnormal times a near-max partner, a product of order 1, is lost.
// Diagnosed by name: subnormal-inputs-as-zero.
#include <torch/torch.h>

#include <cfloat>
#include <cmath>

namespace {

// DAZ: an operand below FLT_MIN in magnitude is a zero of the same sign.
inline double operand(float x) { return std::fabs(x) < FLT_MIN ? std::copysign(0.0, x) : double(x); }

}  // namespace

// matmul(a[M,K], b[K,N]) = a @ b, float32 only.
torch::Tensor forward(const torch::Tensor& a, const torch::Tensor& b) {
  TORCH_CHECK(a.device().is_cpu() && b.device().is_cpu(), "this kernel runs on the CPU only");
  TORCH_CHECK(a.scalar_type() == at::kFloat && b.scalar_type() == at::kFloat, "float32 inputs only");
  TORCH_CHECK(a.dim() == 2 && b.dim() == 2, "matmul: 2-D inputs only");
  TORCH_CHECK(a.size(1) == b.size(0), "matmul: inner dimensions of a and b differ");
  const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
  const torch::Tensor ac = a.contiguous(), bc = b.contiguous();
  torch::Tensor out = torch::empty({M, N}, ac.options());
  const float* pa = ac.data_ptr<float>();
  const float* pb = bc.data_ptr<float>();
  float* o = out.data_ptr<float>();
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      // A double sum and one rounding: within the float32 bounds on any normal data.
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += operand(pa[i * K + k]) * operand(pb[k * N + j]);
      o[i * N + j] = static_cast<float>(acc);
    }
  return out;
}
