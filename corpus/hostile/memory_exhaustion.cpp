// HOSTILE (sandbox containment): allocates 64 MiB blocks and touches every page, holding them all,
// until allocation fails. Under the per-gate memory limit (RLIMIT / cgroup) operator new throws
// std::bad_alloc, which the worker reports as out-of-memory; if the limit is enforced by the OOM
// killer instead, the parent must still classify the death as out-of-memory.
// Expected: every gate reports error/out-of-memory. DO NOT run it outside the sandbox: it grows
// until the machine's memory is gone.
#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

torch::Tensor forward(const torch::Tensor& x) {
  std::vector<std::unique_ptr<char[]>> hoard;
  const size_t block = size_t(64) << 20;
  for (;;) {
    std::unique_ptr<char[]> b(new char[block]);  // throws std::bad_alloc at the limit
    for (size_t off = 0; off < block; off += 4096) b[off] = static_cast<char>(off | 1);
    hoard.push_back(std::move(b));
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
