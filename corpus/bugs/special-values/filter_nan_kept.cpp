// PLANTED BUG (special-values): filter written as "drop what is at or below the threshold": an
// element is kept when !(x <= threshold), the complement of the drop test, which is not x > threshold
// once NaN is involved: NaN <= t is false, so every NaN is kept where x[x > threshold] drops it (the
// output is longer by the NaN count). On every finite input the two tests agree, so the
// KernelBench-style check's U[0,1) inputs and every finite-valued gate pass; the special-values
// gate's NaNs do not.
#include <torch/torch.h>

#include <cstdint>

namespace {

inline void check_float_cpu(const torch::Tensor& t) {
  TORCH_CHECK(t.defined(), "input tensor is undefined");
  TORCH_CHECK(t.device().is_cpu(), "this kernel runs on the CPU only");
  TORCH_CHECK(t.layout() == at::kStrided, "only strided (dense) tensors are supported");
  const auto s = t.scalar_type();
  TORCH_CHECK(s == at::kFloat || s == at::kHalf || s == at::kBFloat16,
              "unsupported dtype: expected float32, float16 or bfloat16");
}

}  // namespace

torch::Tensor forward(const torch::Tensor& x, double threshold) {
  check_float_cpu(x);
  TORCH_CHECK(x.dim() == 1, "filter: x must be 1-D [N]");
  const torch::Tensor xc = x.contiguous();
  const int64_t N = xc.size(0);
  torch::Tensor out;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "filter_drop_at_or_below", [&] {
    const scalar_t* in = xc.data_ptr<scalar_t>();
    int64_t kept = 0;
    for (int64_t i = 0; i < N; ++i) kept += !(static_cast<double>(in[i]) <= threshold);  // BUG: keeps NaN
    out = torch::empty({kept}, xc.options());
    scalar_t* y = out.data_ptr<scalar_t>();
    int64_t k = 0;
    for (int64_t i = 0; i < N; ++i)
      if (!(static_cast<double>(in[i]) <= threshold)) y[k++] = in[i];
  });
  return out;
}
