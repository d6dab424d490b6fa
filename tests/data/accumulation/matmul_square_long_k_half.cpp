// Test kernel (accumulation gate on a square-only contract): a square matmul whose long-K path accumulates in the input dtype.
//
// Refuses anything but square inputs (its declared contract: M = K = N). For K >= 256, as a tiled
// "fast path" would, each dot product runs in scalar_t: float16/bfloat16 sums round at every step.
// Shorter K sums in double and rounds once. A gate that shrinks a square case to 8 terms (the
// smallest size asked of the group) never reaches the bug.
#include <torch/torch.h>

torch::Tensor forward(const torch::Tensor& a, const torch::Tensor& b) {
  TORCH_CHECK(a.dim() == 2 && b.dim() == 2, "matmul: 2-D inputs only");
  TORCH_CHECK(a.size(0) == a.size(1) && b.size(0) == b.size(1) && a.size(1) == b.size(0),
              "matmul: square inputs only (M = K = N)");
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "matmul: one dtype");
  const int64_t n = a.size(0);
  const torch::Tensor ac = a.contiguous(), bc = b.contiguous();
  torch::Tensor out = torch::empty({n, n}, ac.options());
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, ac.scalar_type(), "matmul_square_long_k_half", [&] {
    const scalar_t* pa = ac.data_ptr<scalar_t>();
    const scalar_t* pb = bc.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        if (n < 256) {
          double acc = 0;  // a double accumulator, rounded at the end: within the bounds
          for (int64_t k = 0; k < n; ++k) acc += double(pa[i * n + k]) * double(pb[k * n + j]);
          o[i * n + j] = scalar_t(float(acc));
          continue;
        }
        scalar_t acc = scalar_t(0);  // BUG: the long-K path accumulates in the input dtype
        for (int64_t k = 0; k < n; ++k) acc += pa[i * n + k] * pb[k * n + j];
        o[i * n + j] = acc;
      }
  });
  return out;
}
