// PLANTED BUG (accuracy): sort with std::sort where std::stable_sort was meant. The comparator is
// torch's order (NaN last, -0.0 == +0.0), so the keys come out right, but introsort is not stable:
// among equal keys the positions (and so the values) come out in whatever order its partitions
// and heap leave them (libstdc++'s insertion sort below 17 elements happens to be stable, so N <= 16
// is right). The KernelBench-style check's U[0,1) float32 keys never tie, so allclose on both
// outputs passes; the gates' tied keys (all equal, runs, Zipf repeats, +0.0 beside -0.0) do not.
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

namespace {

inline void check_float_cpu(const torch::Tensor& t) {
  TORCH_CHECK(t.defined(), "input tensor is undefined");
  TORCH_CHECK(t.device().is_cpu(), "this kernel runs on the CPU only");
  TORCH_CHECK(t.layout() == at::kStrided, "only strided (dense) tensors are supported");
  const auto s = t.scalar_type();
  TORCH_CHECK(s == at::kFloat || s == at::kHalf || s == at::kBFloat16,
              "unsupported dtype: expected float32, float16 or bfloat16");
}

// Strict weak order of torch.sort: NaN is not before anything, everything else is before NaN.
inline bool key_before(double a, double b) {
  if (std::isnan(a)) return false;
  if (std::isnan(b)) return true;
  return a < b;
}

}  // namespace

std::vector<torch::Tensor> forward(const torch::Tensor& keys, const torch::Tensor& values) {
  check_float_cpu(keys);
  TORCH_CHECK(keys.dim() == 1, "sort: keys must be 1-D [N]");
  TORCH_CHECK(values.defined() && values.device().is_cpu() && values.layout() == at::kStrided,
              "sort: values must be a dense CPU tensor");
  TORCH_CHECK(values.scalar_type() == at::kLong, "sort: values must be int64");
  TORCH_CHECK(values.dim() == 1 && values.size(0) == keys.size(0), "sort: values must be 1-D with as many elements as keys");
  const torch::Tensor kc = keys.contiguous(), vc = values.contiguous();
  const int64_t N = kc.size(0);
  torch::Tensor out_keys = torch::empty({N}, kc.options());
  torch::Tensor out_values = torch::empty({N}, vc.options());
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, kc.scalar_type(), "sort_introsort", [&] {
    const scalar_t* k = kc.data_ptr<scalar_t>();
    const int64_t* v = vc.data_ptr<int64_t>();
    std::vector<double> key(static_cast<size_t>(N));
    for (int64_t i = 0; i < N; ++i) key[size_t(i)] = static_cast<double>(k[i]);
    std::vector<int64_t> order(static_cast<size_t>(N));
    std::iota(order.begin(), order.end(), int64_t(0));
    std::sort(order.begin(), order.end(),  // BUG: not stable: equal keys lose their input order
                     [&](int64_t a, int64_t b) { return key_before(key[size_t(a)], key[size_t(b)]); });
    scalar_t* ok = out_keys.data_ptr<scalar_t>();
    int64_t* ov = out_values.data_ptr<int64_t>();
    for (int64_t j = 0; j < N; ++j) {
      ok[j] = k[order[size_t(j)]];
      ov[j] = v[order[size_t(j)]];
    }
  });
  return {out_keys, out_values};
}
