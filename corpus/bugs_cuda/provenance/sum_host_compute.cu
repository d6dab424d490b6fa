// PLANTED BUG (provenance): a "CUDA" sum that copies its input to the host (x.cpu()), sums there
// in double (right, one rounding per output) and copies the result back to x's device. Every
// value, shape, dtype and device is right, but the work is not done on the GPU: "a CUDA kernel
// must not compute on the host" (SPEC, provenance). The provenance gate sees the device-to-host
// copy of the input among the recorded ATen ops (aten::to / aten::_to_copy / aten::copy_ to cpu)
// and no kernel launch of the candidate's own.
#include <torch/extension.h>

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace {

void check_float_cuda(const torch::Tensor& t) {
  TORCH_CHECK(t.defined(), "input tensor is undefined");
  TORCH_CHECK(t.is_cuda(), "this kernel runs on CUDA tensors only");
  TORCH_CHECK(t.layout() == at::kStrided, "only strided (dense) tensors are supported");
  const auto s = t.scalar_type();
  TORCH_CHECK(s == at::kFloat || s == at::kHalf || s == at::kBFloat16,
              "unsupported dtype: expected float32, float16 or bfloat16");
}

int64_t wrap_dim(int64_t dim, int64_t rank) {
  TORCH_CHECK(rank >= 1, "input must have at least one dimension");
  TORCH_CHECK(dim >= -rank && dim < rank, "dim out of range");
  return dim < 0 ? dim + rank : dim;
}

}  // namespace

torch::Tensor forward(const torch::Tensor& x, int64_t dim) {
  check_float_cuda(x);
  const int64_t d = wrap_dim(dim, x.dim());
  const c10::cuda::CUDAGuard guard(x.device());
  // BUG: the whole computation happens on the host.
  const torch::Tensor xh = x.contiguous().cpu().to(at::kDouble);
  int64_t outer = 1, K = xh.size(d), inner = 1;
  std::vector<int64_t> out_sizes;
  for (int64_t i = 0; i < xh.dim(); ++i) {
    if (i < d) outer *= xh.size(i);
    if (i > d) inner *= xh.size(i);
    if (i != d) out_sizes.push_back(xh.size(i));
  }
  torch::Tensor yh = torch::empty(out_sizes, xh.options());
  const double* in = xh.data_ptr<double>();
  double* o = yh.data_ptr<double>();
  for (int64_t p = 0; p < outer; ++p)
    for (int64_t i = 0; i < inner; ++i) {
      double s = 0.0;
      for (int64_t k = 0; k < K; ++k) s += in[(p * K + k) * inner + i];
      o[p * inner + i] = s;
    }
  return yh.to(x.scalar_type()).to(x.device());  // double -> dtype: one rounding (on the host)
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "sum (computed on the host)"); }
