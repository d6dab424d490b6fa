// gauntlet corpus, planted bug: unique with 16-bit run counters.
// PLANTED BUG: the run lengths are counted in uint16_t (a "compact" scratch array: half the memory of
// int32, a quarter of int64, the kind of saving a fast kernel reaches for) and widened to int64 only
// when written. A run of 65536 or more equal keys wraps: 65536 equal keys count 0, 65537 count 1.
// Every count below 65536 is right, so every output at N < 65536 is exact: the typical sizes and the
// KernelBench-style check (N = 1024, uniform keys) never see it. It shows where one key repeats
// 65536 times: all keys equal (or two keys, R = 1) at N >= 65536.
#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <vector>

std::vector<torch::Tensor> forward(const torch::Tensor& x) {
  TORCH_CHECK(x.defined() && x.device().is_cpu() && x.layout() == at::kStrided, "unique: x must be a dense CPU tensor");
  TORCH_CHECK(x.scalar_type() == at::kLong, "unique: x must be int64");
  TORCH_CHECK(x.dim() == 1, "unique: x must be 1-D [N]");
  const torch::Tensor xc = x.contiguous();
  const int64_t N = xc.size(0);
  const int64_t* in = xc.data_ptr<int64_t>();
  std::vector<int64_t> keys(in, in + N);
  std::sort(keys.begin(), keys.end());
  int64_t runs = 0;
  for (int64_t i = 0; i < N; ++i) runs += i == 0 || keys[size_t(i)] != keys[size_t(i - 1)];
  torch::Tensor values = torch::empty({runs}, xc.options());
  torch::Tensor counts = torch::empty({runs}, xc.options());
  int64_t* v = values.data_ptr<int64_t>();
  int64_t* c = counts.data_ptr<int64_t>();
  std::vector<uint16_t> len(size_t(runs), 0);  // BUG: 16-bit counters wrap at 65536
  int64_t r = -1;
  for (int64_t i = 0; i < N; ++i) {
    if (i == 0 || keys[size_t(i)] != keys[size_t(i - 1)]) v[++r] = keys[size_t(i)];
    ++len[size_t(r)];
  }
  for (int64_t k = 0; k < runs; ++k) c[k] = len[size_t(k)];
  return {values, counts};
}
