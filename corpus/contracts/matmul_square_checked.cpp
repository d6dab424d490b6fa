// gauntlet corpus, honest narrow contract: a square-only matmul that refuses everything else.
// Written as the KernelBench "Square matrix multiplication" solutions are (N read from A.size(0),
// row-major indexing), but it checks the contract it declares (equal_dims M = K = N, float32) and
// raises outside it. Expected to pass every gate: outside its contract refusing is right.
#include <torch/torch.h>

#include <cmath>

namespace {

// Error-free summation (TwoSum): the dot product comes out essentially exact before its one rounding.
struct Acc {
  double s = 0.0, c = 0.0;
  void add(double x) {
    const double t = s + x, bp = t - s;
    c += (s - (t - bp)) + (x - bp);
    s = t;
  }
  double value() const { return std::isfinite(s) ? s + c : s; }
};

}  // namespace

torch::Tensor forward(const torch::Tensor& a, const torch::Tensor& b) {
  TORCH_CHECK(a.device().is_cpu() && b.device().is_cpu(), "CPU tensors only");
  TORCH_CHECK(a.scalar_type() == at::kFloat && b.scalar_type() == at::kFloat, "float32 only");
  TORCH_CHECK(a.dim() == 2 && b.dim() == 2, "2-D inputs only");
  const int64_t n = a.size(0);
  TORCH_CHECK(a.size(1) == n && b.size(0) == n && b.size(1) == n, "square N x N inputs only");
  const torch::Tensor ac = a.contiguous(), bc = b.contiguous();
  torch::Tensor out = torch::empty({n, n}, ac.options());
  const float* pa = ac.data_ptr<float>();
  const float* pb = bc.data_ptr<float>();
  float* o = out.data_ptr<float>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      Acc acc;
      for (int64_t k = 0; k < n; ++k) acc.add(double(pa[i * n + k]) * double(pb[k * n + j]));
      o[i * n + j] = float(acc.value());
    }
  return out;
}
