// gauntlet corpus, correct control: unique (torch.unique(x, sorted=True, return_counts=True)).
// A reference-grade native CPU kernel (SPEC kernel form 1): the keys copied and sorted as signed
// int64 (std::sort: equal keys are indistinguishable, so stability does not matter), then one pass
// over the runs of equal keys writes each run's key and its length, counted in int64 (a count
// reaches N, which int64 holds for any N). Two outputs of exactly the number of runs.
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
  int64_t r = -1;
  for (int64_t i = 0; i < N; ++i) {
    if (i == 0 || keys[size_t(i)] != keys[size_t(i - 1)]) {
      v[++r] = keys[size_t(i)];
      c[r] = 0;
    }
    ++c[r];
  }
  return {values, counts};
}
