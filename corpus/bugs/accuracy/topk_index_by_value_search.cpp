// gauntlet corpus, planted bug: topk whose indices are found again by searching for each value.
// The values are right. Each index is then recovered as the first position of the row holding that
// value, so tied values among the k largest all get the same index: an index repeats and another
// tied element's never appears. Random floats never tie (KernelBench's check accepts it); a row
// with repeated values at the top fails.
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <tuple>
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

// torch.topk's order: a before b when a is larger, NaN larger than everything (NaNs tie).
inline bool larger(double a, double b) {
  if (std::isnan(b)) return false;
  if (std::isnan(a)) return true;
  return a > b;
}

}  // namespace

// topk(x[B,N], k) -> (values[B,k], indices[B,k] int64).
std::tuple<torch::Tensor, torch::Tensor> forward(const torch::Tensor& x, int64_t k) {
  check_float_cpu(x);
  TORCH_CHECK(x.dim() == 2, "topk: x must be 2-D [B, N]");
  const int64_t B = x.size(0), N = x.size(1);
  TORCH_CHECK(k >= 0 && k <= N, "topk: k must lie in [0, N]");
  const torch::Tensor xc = x.contiguous();
  torch::Tensor values = torch::empty({B, k}, xc.options());
  torch::Tensor indices = torch::empty({B, k}, xc.options().dtype(torch::kLong));
  if (B == 0 || k == 0) return {values, indices};
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "topk_index_by_value_search", [&] {
    const scalar_t* in = xc.data_ptr<scalar_t>();
    scalar_t* v = values.data_ptr<scalar_t>();
    int64_t* ix = indices.data_ptr<int64_t>();
    std::vector<int64_t> order(static_cast<size_t>(N));
    for (int64_t b = 0; b < B; ++b) {
      const scalar_t* row = in + b * N;
      std::iota(order.begin(), order.end(), int64_t(0));
      // A stable partial order: the k largest first, ties by the lower index.
      std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t p, int64_t q) {
        const double a = static_cast<double>(row[p]), c = static_cast<double>(row[q]);
        if (larger(a, c)) return true;
        if (larger(c, a)) return false;
        return p < q;
      });
      for (int64_t j = 0; j < k; ++j) {
        const scalar_t value = row[order[size_t(j)]];
        v[b * k + j] = value;
        // BUG: the first position holding the value, not the position it was selected from.
        const double want = static_cast<double>(value);
        int64_t at = 0;
        while (at < N && !(static_cast<double>(row[at]) == want || (std::isnan(want) && std::isnan(static_cast<double>(row[at])))))
          ++at;
        ix[b * k + j] = at;
      }
    }
  });
  return {values, indices};
}
