// A correct relu whose time jumps at random: about every other call (a pseudo-random choice, so no
// pattern of input sets or call order explains it) also spins for five times its own work. Not a bug (every output is right) but a run no timer can hold steady: the timing gate
// must time it again and then report it unsteady instead of quoting its figures as if they
// were sound (tests/gates/timing_test.cpp).
#include <torch/torch.h>

#include <chrono>

torch::Tensor forward(const torch::Tensor& x) {
  TORCH_CHECK(x.device().is_cpu(), "this kernel runs on the CPU only");
  const auto t0 = std::chrono::steady_clock::now();
  torch::Tensor out = torch::empty_like(x.contiguous());
  const torch::Tensor xc = x.contiguous();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "relu_bimodal", [&] {
    const scalar_t* in = xc.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    for (int64_t i = 0; i < xc.numel(); ++i) o[i] = (static_cast<double>(in[i]) < 0.0) ? scalar_t(0.0f) : in[i];
  });
  static uint32_t state = 2463534242u;  // xorshift32
  state ^= state << 13, state ^= state >> 17, state ^= state << 5;
  if (state & 1u) {
    const auto work = std::chrono::steady_clock::now() - t0;
    while (std::chrono::steady_clock::now() - t0 < 6 * work) {
    }
  }
  return out;
}
