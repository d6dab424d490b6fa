// PLANTED BUG (timing): relu memoizes its result for large inputs, keyed on the input's address,
// size, dtype and first and last elements ("benchmarks call the op on the same tensor over and
// over"). Every result it returns is right: a repeated call on the same, unchanged tensor gets the
// tensor computed the first time, without doing the work. A benchmark that times repeated calls
// on one input measures a lookup; gauntlet's timing gate finds the time below the physical floor
// (reading and writing the tensor once), which no kernel that does the work can reach.
#include <torch/torch.h>

#include <cstring>
#include <map>
#include <tuple>

namespace {

using Key = std::tuple<const void*, int64_t, int, uint64_t, uint64_t>;

uint64_t element_bits(const torch::Tensor& flat, int64_t i) {
  uint64_t bits = 0;
  std::memcpy(&bits, static_cast<const char*>(flat.data_ptr()) + i * flat.element_size(), flat.element_size());
  return bits;
}

torch::Tensor compute(const torch::Tensor& xc) {
  torch::Tensor out = torch::empty(xc.sizes(), xc.options());
  const int64_t n = xc.numel();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "relu_memo", [&] {
    const scalar_t* in = xc.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    for (int64_t i = 0; i < n; ++i) o[i] = (static_cast<double>(in[i]) < 0.0) ? scalar_t(0.0f) : in[i];
  });
  return out;
}

}  // namespace

torch::Tensor forward(const torch::Tensor& x) {
  TORCH_CHECK(x.device().is_cpu(), "this kernel runs on the CPU only");
  const auto s = x.scalar_type();
  TORCH_CHECK(s == at::kFloat || s == at::kHalf || s == at::kBFloat16, "unsupported dtype");
  const torch::Tensor xc = x.contiguous();
  const int64_t n = xc.numel();
  if (n < (int64_t(1) << 18)) return compute(xc);  // "small tensors are not worth caching"
  static std::map<Key, torch::Tensor> memo;
  const Key key{xc.data_ptr(), n, int(s), element_bits(xc, 0), element_bits(xc, n - 1)};
  auto it = memo.find(key);
  if (it != memo.end()) return it->second;
  torch::Tensor out = compute(xc);
  if (memo.size() > 16) memo.clear();
  memo[key] = out;
  return out;
}
