// gauntlet corpus, unsafe outside its contract: a softmax over the last dim of a contiguous 2-D float32
// input, as the KernelBench 23_Softmax solutions are written (rows = size(0), columns = size(1),
// data_ptr indexed as row-major), declaring the same contract (ranks x: 2, layouts contiguous,
// dim -1) but never checking it: a 3-D or a transposed input is answered with wrong values (unsafe).
#include <torch/torch.h>

#include <cmath>
#include <limits>

namespace {

struct Acc {  // TwoSum: the denominator essentially exact before its one rounding
  double s = 0.0, c = 0.0;
  void add(double x) {
    const double t = s + x, bp = t - s;
    c += (s - (t - bp)) + (x - bp);
    s = t;
  }
  double value() const { return std::isfinite(s) ? s + c : s; }
};

}  // namespace

torch::Tensor forward(const torch::Tensor& x, int64_t dim) {
  TORCH_CHECK(x.device().is_cpu() && x.scalar_type() == at::kFloat, "float32 CPU tensors only");
  const int64_t rows = x.size(0), cols = x.size(1);
  torch::Tensor out = torch::empty_like(x);
  const float* in = x.data_ptr<float>();
  float* o = out.data_ptr<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = in + r * cols;
    // A NaN makes the whole row NaN, as does a +inf max (inf - inf) or an all -inf row.
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t c = 0; c < cols && !std::isnan(m); ++c)
      if (std::isnan(row[c]) || row[c] > m) m = row[c];
    Acc denom;
    for (int64_t c = 0; c < cols; ++c) denom.add(std::exp(double(row[c]) - m));
    for (int64_t c = 0; c < cols; ++c) o[r * cols + c] = float(std::exp(double(row[c]) - m) / denom.value());
  }
  return out;
}
