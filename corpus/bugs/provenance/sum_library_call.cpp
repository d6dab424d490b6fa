// gauntlet corpus, planted bug (provenance): a "sum kernel" that hands the work to at::sum.
// Every value is right (the library is right), so allclose-style checks and every numerical gate
// accept it, but the kernel computes nothing itself: the submission is the library call it was
// meant to replace. The provenance gate records aten::sum (RecordFunction), which sum.json forbids.
#include <torch/torch.h>

torch::Tensor forward(const torch::Tensor& x, int64_t dim) {
  TORCH_CHECK(x.device().is_cpu(), "this kernel runs on the CPU only");
  const auto s = x.scalar_type();
  TORCH_CHECK(s == at::kFloat || s == at::kHalf || s == at::kBFloat16,
              "unsupported dtype: expected float32, float16 or bfloat16");
  TORCH_CHECK(x.dim() >= 1, "input must have at least one dimension");
  TORCH_CHECK(dim >= -x.dim() && dim < x.dim(), "dim out of range");
  // BUG: the whole "kernel" is the reference implementation.
  return x.sum(dim);
}
