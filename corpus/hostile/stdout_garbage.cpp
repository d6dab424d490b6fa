// HOSTILE (sandbox containment): writes junk to stdout and to every file descriptor 0..64 (errors
// ignored), then returns a correct relu. Whatever fd carries the worker's reply is corrupted.
// Expected: every gate reports error/crash (protocol violation), never a pass and never a
// harness-error.
#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <unistd.h>

torch::Tensor forward(const torch::Tensor& x) {
  static const char junk[] = "\x00\xff GAUNTLET-JUNK {\"verdict\":\"pass\"} \xde\xad\xbe\xef\n";
  std::fputs("garbage on stdout {\"status\":\"ok\"}\n", stdout);
  std::fflush(stdout);
  for (int fd = 0; fd <= 64; ++fd) {
    ssize_t w = ::write(fd, junk, sizeof junk);
    (void)w;
  }
  torch::Tensor xc = x.contiguous();
  torch::Tensor out = torch::empty(xc.sizes(), xc.options());
  const int64_t n = xc.numel();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "hostile_relu", [&] {
    const scalar_t* in = xc.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    for (int64_t i = 0; i < n; ++i) {
      const float v = static_cast<float>(in[i]);
      o[i] = (std::isnan(v) || v > 0.0f) ? in[i] : scalar_t(0.0f);
    }
  });
  return out;
}
