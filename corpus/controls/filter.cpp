// gauntlet corpus, correct control: filter (x[x > threshold], order preserved).
// A reference-grade native CPU kernel (SPEC kernel form 1): one pass counting the kept elements,
// one pass copying them in input order into a fresh tensor of exactly that length. The comparison
// is made in double, where every float32/float16/bfloat16 value and the threshold are exact.
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

// NaN > threshold is false (NaN dropped); a NaN threshold keeps nothing. N = 0 gives an empty output.
torch::Tensor forward(const torch::Tensor& x, double threshold) {
  check_float_cpu(x);
  TORCH_CHECK(x.dim() == 1, "filter: x must be 1-D [N]");
  const torch::Tensor xc = x.contiguous();
  const int64_t N = xc.size(0);
  torch::Tensor out;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "filter_control", [&] {
    const scalar_t* in = xc.data_ptr<scalar_t>();
    int64_t kept = 0;
    for (int64_t i = 0; i < N; ++i) kept += static_cast<double>(in[i]) > threshold;
    out = torch::empty({kept}, xc.options());
    scalar_t* y = out.data_ptr<scalar_t>();
    int64_t k = 0;
    for (int64_t i = 0; i < N; ++i)
      if (static_cast<double>(in[i]) > threshold) y[k++] = in[i];
  });
  return out;
}
