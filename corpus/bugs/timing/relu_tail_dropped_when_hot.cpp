// PLANTED BUG (timing): relu switches to a "hot path" after its sixteenth call on a large input in
// the process (the JIT-style specialization an autotuner would do), and the hot path processes
// the tensor in blocks of 1024 elements, zero-filling the partial block at the end instead of
// computing it. Every call before the switch is right, so five trials and every correctness gate
// (few large calls per process) see a correct kernel; a benchmark loop times the wrong hot path.
// gauntlet's timing gate re-checks every timed output against the verified one.
#include <torch/torch.h>

namespace {

template <typename scalar_t>
void relu_range(const scalar_t* in, scalar_t* o, int64_t lo, int64_t hi) {
  for (int64_t i = lo; i < hi; ++i) o[i] = (static_cast<double>(in[i]) < 0.0) ? scalar_t(0.0f) : in[i];
}

}  // namespace

torch::Tensor forward(const torch::Tensor& x) {
  TORCH_CHECK(x.device().is_cpu(), "this kernel runs on the CPU only");
  const auto s = x.scalar_type();
  TORCH_CHECK(s == at::kFloat || s == at::kHalf || s == at::kBFloat16, "unsupported dtype");
  const torch::Tensor xc = x.contiguous();
  torch::Tensor out = torch::empty(xc.sizes(), xc.options());
  const int64_t n = xc.numel();
  static int large_calls = 0;
  const bool hot = n >= (int64_t(1) << 18) && ++large_calls > 16;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "relu_hot", [&] {
    const scalar_t* in = xc.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    if (!hot) {
      relu_range(in, o, 0, n);
      return;
    }
    const int64_t full = n / 1024 * 1024;
    relu_range(in, o, 0, full);
    for (int64_t i = full; i < n; ++i) o[i] = scalar_t(0.0f);
  });
  return out;
}
