// PLANTED BUG (shapes): filter as order-preserving stream compaction in blocks of 256 (per-block
// counts, an exclusive scan of them, a scatter), with the block count taken as max(1, N / 256):
// floor division, where ceil((N + 255) / 256) was meant. Each block copies min(256, N - start)
// elements, so N < 256 (one partial block) and multiples of 256 are right; for N = 257, 511, 1025,
// ... the last N % 256 elements are never looked at and their kept values are missing from the
// output (which is short). Typical N (1, 7, 100, 1024, 4096) and the KernelBench-style check's
// N = 100 never see it; the shapes gate's block edges (257, 513, 1025, 4097, 65537) do.
#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
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

constexpr int64_t kBlock = 256;

}  // namespace

torch::Tensor forward(const torch::Tensor& x, double threshold) {
  check_float_cpu(x);
  TORCH_CHECK(x.dim() == 1, "filter: x must be 1-D [N]");
  const torch::Tensor xc = x.contiguous();
  const int64_t N = xc.size(0);
  const int64_t blocks = std::max<int64_t>(1, N / kBlock);  // BUG: floor; should be (N + kBlock - 1) / kBlock
  torch::Tensor out;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "filter_blocks", [&] {
    const scalar_t* in = xc.data_ptr<scalar_t>();
    // Pass 1: kept elements per block.
    std::vector<int64_t> count(size_t(blocks), 0), offset(size_t(blocks), 0);
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t start = b * kBlock, len = std::min(kBlock, N - start);
      for (int64_t i = start; i < start + len; ++i) count[size_t(b)] += static_cast<double>(in[i]) > threshold;
    }
    // Pass 2: exclusive scan, the output's length.
    int64_t total = 0;
    for (int64_t b = 0; b < blocks; ++b) offset[size_t(b)] = total, total += count[size_t(b)];
    out = torch::empty({total}, xc.options());
    scalar_t* y = out.data_ptr<scalar_t>();
    // Pass 3: each block scatters its kept elements, in order, from its offset.
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t start = b * kBlock, len = std::min(kBlock, N - start);
      int64_t k = offset[size_t(b)];
      for (int64_t i = start; i < start + len; ++i)
        if (static_cast<double>(in[i]) > threshold) y[k++] = in[i];
    }
  });
  return out;
}
