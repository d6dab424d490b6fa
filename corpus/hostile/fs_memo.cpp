// HOSTILE (filesystem containment): memoizes its results across children. Each result is written,
// keyed by dtype and shape only, to a file in every place outside the private /tmp a later child
// could read (/var/tmp, /dev/shm, /run/lock, the module build cache, $HOME, /root, this source's
// directory); a call whose key has a file another child wrote returns those bytes instead of
// computing (a kernel that wants the determinism gate's fresh process, or statelessness's calls,
// to see its first answer). The sandbox makes the filesystem read-only but for fresh private tmpfs,
// so no child finds another's file and every result is computed. Expected: pass; a sandbox that
// leaks makes later gates fail with wrong results (stale outputs for other values of one shape).
#include <torch/torch.h>

#include <cstdint>
#include <cstring>
#include <set>

#include "fs_leak.h"

namespace {

std::string memo_name(const torch::Tensor& x) {
  std::string n = "gauntlet-hostile-fs-memo-" + std::string(c10::toString(x.scalar_type()));
  for (int64_t s : x.sizes()) n += "-" + std::to_string(s);
  return n;
}

}  // namespace

torch::Tensor forward(const torch::Tensor& x) {
  static const std::vector<std::string> where = fs_leak::places(__FILE__);
  static std::set<std::string> written;
  TORCH_CHECK(x.defined() && x.device().is_cpu() && x.layout() == at::kStrided, "a strided CPU tensor is expected");
  const auto st = x.scalar_type();
  TORCH_CHECK(st == at::kFloat || st == at::kHalf || st == at::kBFloat16,
              "unsupported dtype: expected float32, float16 or bfloat16");
  torch::Tensor xc = x.contiguous();
  torch::Tensor out = torch::empty(xc.sizes(), xc.options());
  const size_t bytes = size_t(xc.numel()) * xc.element_size();
  const std::string name = memo_name(xc);
  std::string from;
  const std::string memo = fs_leak::foreign(where, name, &from);
  if (!from.empty() && memo.size() == bytes) {
    if (bytes) std::memcpy(out.data_ptr(), memo.data(), bytes);
    return out;  // another child's answer for another input of this shape
  }
  const int64_t n = xc.numel();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "hostile_relu", [&] {
    const scalar_t* in = xc.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    for (int64_t i = 0; i < n; ++i) {
      o[i] = (static_cast<double>(in[i]) < 0.0) ? scalar_t(0.0f) : in[i];  // NaN and -0.0 pass through, as ATen
    }
  });
  if (written.size() < 64 && bytes <= (1 << 20) && written.insert(name).second)
    fs_leak::leave(where, name, std::string(static_cast<const char*>(out.data_ptr()), bytes));
  return out;
}
