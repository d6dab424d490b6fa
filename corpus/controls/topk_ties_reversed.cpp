// gauntlet corpus, correct control: topk that orders tied values by the HIGHER index.
// The same kernel as controls/topk.cpp except for the tie order: among equal values any index is
// right (the schema's permutation_of_ties), so this one must pass every gate too. It is the
// control of the output matching: compared position by position with the oracle's (which takes
// the lower index) it would fail wherever ties meet.
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
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "topk_ties_reversed", [&] {
    const scalar_t* in = xc.data_ptr<scalar_t>();
    scalar_t* v = values.data_ptr<scalar_t>();
    int64_t* ix = indices.data_ptr<int64_t>();
    std::vector<int64_t> order(static_cast<size_t>(N));
    for (int64_t b = 0; b < B; ++b) {
      const scalar_t* row = in + b * N;
      std::iota(order.begin(), order.end(), int64_t(0));
      // The k largest first, ties by the higher index (the oracle takes the lower).
      std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t p, int64_t q) {
        const double a = static_cast<double>(row[p]), c = static_cast<double>(row[q]);
        if (larger(a, c)) return true;
        if (larger(c, a)) return false;
        return p > q;
      });
      for (int64_t j = 0; j < k; ++j) {
        v[b * k + j] = row[order[size_t(j)]];
        ix[b * k + j] = order[size_t(j)];
      }
    }
  });
  return {values, indices};
}
