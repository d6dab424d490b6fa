// gauntlet corpus, planted bug: unique whose padding sentinel swallows INT64_MAX.
// PLANTED BUG: the kernel sorts in fixed tiles of 256 keys, padding the last tile with INT64_MAX
// (a sentinel that sorts after every key, the usual trick of a blocked sort), and then drops the run
// of INT64_MAX from the output as "padding". A real key INT64_MAX is dropped with it: its value and
// count are missing (and when N is a multiple of 256 there is no padding, yet the run is dropped
// all the same). No other key is affected, so the kernel is exact on any input without INT64_MAX:
// the typical draws (keys in [-R, R)) and the KernelBench-style check's uniform keys never hold
// it; the int64_limits keys (a quarter at the ends of int64) do.
#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

std::vector<torch::Tensor> forward(const torch::Tensor& x) {
  TORCH_CHECK(x.defined() && x.device().is_cpu() && x.layout() == at::kStrided, "unique: x must be a dense CPU tensor");
  TORCH_CHECK(x.scalar_type() == at::kLong, "unique: x must be int64");
  TORCH_CHECK(x.dim() == 1, "unique: x must be 1-D [N]");
  const torch::Tensor xc = x.contiguous();
  const int64_t N = xc.size(0);
  const int64_t* in = xc.data_ptr<int64_t>();
  constexpr int64_t kTile = 256, kPad = std::numeric_limits<int64_t>::max();
  std::vector<int64_t> keys(in, in + N);
  keys.resize(size_t((N + kTile - 1) / kTile * kTile), kPad);  // the last tile padded with the sentinel
  std::sort(keys.begin(), keys.end());
  // BUG: the sentinel's run is cut off as padding, and with it every real INT64_MAX key.
  int64_t end = int64_t(keys.size());
  while (end > 0 && keys[size_t(end - 1)] == kPad) --end;
  keys.resize(size_t(end));
  const int64_t n = end;
  int64_t runs = 0;
  for (int64_t i = 0; i < n; ++i) runs += i == 0 || keys[size_t(i)] != keys[size_t(i - 1)];
  torch::Tensor values = torch::empty({runs}, xc.options());
  torch::Tensor counts = torch::empty({runs}, xc.options());
  int64_t* v = values.data_ptr<int64_t>();
  int64_t* c = counts.data_ptr<int64_t>();
  int64_t r = -1;
  for (int64_t i = 0; i < n; ++i) {
    if (i == 0 || keys[size_t(i)] != keys[size_t(i - 1)]) {
      v[++r] = keys[size_t(i)];
      c[r] = 0;
    }
    ++c[r];
  }
  return {values, counts};
}
