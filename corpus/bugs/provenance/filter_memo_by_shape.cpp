// PLANTED BUG (provenance): filter memoizes its result by (dtype, N, threshold), as if a call's
// data never changed once its shape and threshold were seen (a benchmark loop's repeated inputs).
// Fresh inputs of a new shape or threshold, and exact repeats, are right, so the accuracy gate, the
// determinism gate and the A/B/A statelessness sequences pass; an input that differs from an earlier
// one in its values only gets the stale result, whose length is usually wrong too (an element moved
// across the threshold): the provenance gate's single-element change catches it. A gate that took
// a length unlike the oracle's for the contract gate's finding would let it through.
#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>

namespace {

inline void check_float_cpu(const torch::Tensor& t) {
  TORCH_CHECK(t.defined(), "input tensor is undefined");
  TORCH_CHECK(t.device().is_cpu(), "this kernel runs on the CPU only");
  TORCH_CHECK(t.layout() == at::kStrided, "only strided (dense) tensors are supported");
  const auto s = t.scalar_type();
  TORCH_CHECK(s == at::kFloat || s == at::kHalf || s == at::kBFloat16,
              "unsupported dtype: expected float32, float16 or bfloat16");
}

torch::Tensor compact(const torch::Tensor& xc, double threshold) {
  const int64_t N = xc.size(0);
  torch::Tensor out;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "filter_memo", [&] {
    const scalar_t* in = xc.data_ptr<scalar_t>();
    int64_t kept = 0;
    for (int64_t i = 0; i < N; ++i) kept += static_cast<double>(in[i]) > threshold;
    out = torch::empty({kept}, xc.options());
    scalar_t* y = out.data_ptr<scalar_t>();
    int64_t k = 0;
    for (int64_t i = 0; i < N; ++i)
      if (static_cast<double>(in[i]) > threshold) y[k++] = in[i];
  });
  return out;
}

}  // namespace

torch::Tensor forward(const torch::Tensor& x, double threshold) {
  check_float_cpu(x);
  TORCH_CHECK(x.dim() == 1, "filter: x must be 1-D [N]");
  const torch::Tensor xc = x.contiguous();
  static std::mutex mu;
  static std::map<std::tuple<int, int64_t, double>, torch::Tensor> memo;  // BUG: the values are not in the key
  const auto key = std::make_tuple(int(xc.scalar_type()), xc.size(0), threshold);
  std::lock_guard<std::mutex> lock(mu);
  auto it = memo.find(key);
  if (it == memo.end()) it = memo.emplace(key, compact(xc, threshold)).first;
  return it->second.clone();  // a fresh tensor each call: no aliasing between calls
}
