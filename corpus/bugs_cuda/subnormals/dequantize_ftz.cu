// gauntlet corpus, planted bug (CUDA twin of bugs/subnormals/dequantize_flush_subnormal.cpp): dequantize
// whose product is flush-to-zero. PLANTED BUG: the control's one thread per element, but the product
// is PTX's mul.rn.ftz.f32, what --use_fast_math (-ftz=true) makes of every float32 multiply: a
// subnormal scale is read as zero and a subnormal product written as zero. Exact wherever the scale
// and the result are normal (the KernelBench-style check's scale 0.1); the subnormals gate runs the op
// with its subnormal scales (2^-140, 2^-127, the largest subnormal).
#include <torch/extension.h>

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace {

constexpr int kThreads = 256;

__global__ void dequantize_kernel(const int8_t* __restrict__ x, float* __restrict__ y, int64_t n, float scale,
                                  int zero_point) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int d = int(x[i]) - zero_point;  // exact in int, and in float (9 bits)
    const float f = __int2float_rn(d);
    float r;
    asm("mul.rn.ftz.f32 %0, %1, %2;" : "=f"(r) : "f"(f), "f"(scale));  // BUG: flush-to-zero product
    y[i] = r;
  }
}

}  // namespace

torch::Tensor forward(const torch::Tensor& x, double scale, int64_t zero_point) {
  TORCH_CHECK(x.defined() && x.is_cuda() && x.layout() == at::kStrided, "dequantize: x must be a dense CUDA tensor");
  TORCH_CHECK(x.scalar_type() == at::kChar, "dequantize: x must be int8");
  TORCH_CHECK(std::isfinite(scale) && scale > 0, "dequantize: scale must be finite and positive");
  TORCH_CHECK(zero_point >= -128 && zero_point <= 127, "dequantize: zero_point must lie in [-128, 127]");
  // torch dequantizes with the float32 rounding of the double scale.
  const float s = static_cast<float>(scale);
  TORCH_CHECK(s > 0 && std::isfinite(s), "dequantize: scale rounds to 0 or inf in float32");
  const c10::cuda::CUDAGuard guard(x.device());
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const torch::Tensor xc = x.contiguous();
  torch::Tensor out = torch::empty(xc.sizes(), xc.options().dtype(at::kFloat));
  const int64_t n = xc.numel();
  if (n == 0) return out;
  const int blocks = int(std::min<int64_t>((n + kThreads - 1) / kThreads, 65535));
  dequantize_kernel<<<blocks, kThreads, 0, stream>>>(xc.data_ptr<int8_t>(), out.data_ptr<float>(), n, s,
                                                     int(zero_point));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "dequantize with a flush-to-zero product (planted bug, CUDA)"); }
