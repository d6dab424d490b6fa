// HOSTILE (filesystem containment): the first call in each child leaves a marker file in every place
// outside its private /tmp that a later child could read (/var/tmp, /dev/shm, /run/lock, the module
// build cache, $HOME, /root, the directory of this source), and every call raises if it finds a
// marker another child left. The sandbox makes the filesystem read-only but for fresh private
// tmpfs (/tmp, /var/tmp, /dev/shm, /run/lock), so no child ever finds one. Expected: pass; a
// sandbox that leaks makes every gate after the first an error (runtime-error, "found a marker").
// tests/e2e/fs_containment_test.cpp also checks that no marker is left on the host.
#include <torch/torch.h>

#include <cstdint>

#include "fs_leak.h"

torch::Tensor forward(const torch::Tensor& x) {
  static const std::vector<std::string> where = fs_leak::places(__FILE__);
  std::string from;
  fs_leak::foreign(where, "gauntlet-hostile-fs-marker", &from);
  TORCH_CHECK(from.empty(), "found a marker another sandboxed child left: ", from);
  static const std::string wrote = fs_leak::leave(where, "gauntlet-hostile-fs-marker", "marker");
  (void)wrote;
  TORCH_CHECK(x.defined() && x.device().is_cpu() && x.layout() == at::kStrided, "a strided CPU tensor is expected");
  const auto st = x.scalar_type();
  TORCH_CHECK(st == at::kFloat || st == at::kHalf || st == at::kBFloat16,
              "unsupported dtype: expected float32, float16 or bfloat16");
  torch::Tensor xc = x.contiguous();
  torch::Tensor out = torch::empty(xc.sizes(), xc.options());
  const int64_t n = xc.numel();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "hostile_relu", [&] {
    const scalar_t* in = xc.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    for (int64_t i = 0; i < n; ++i) {
      o[i] = (static_cast<double>(in[i]) < 0.0) ? scalar_t(0.0f) : in[i];  // NaN and -0.0 pass through, as ATen
    }
  });
  return out;
}
