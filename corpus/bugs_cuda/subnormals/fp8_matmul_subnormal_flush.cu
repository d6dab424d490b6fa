// gauntlet corpus, planted bug (CUDA): fp8_matmul that flushes e4m3 subnormals to zero (issue 20).
// The CUDA control (corpus/controls_cuda/fp8_matmul.cu) with a hand-written bit decoder in place
// of __nv_fp8_e4m3's conversion, and no subnormal branch: exponent 0 reads as zero, so inputs
// below 2^-6 vanish.
#include <torch/extension.h>

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <cstdint>
#include <string>

namespace {

constexpr int kThreads = 256;

// e4m3fn by hand: sign, 4 exponent bits (bias 7), 3 fraction bits; S.1111.111 is NaN.
__device__ float decode(__nv_fp8_e4m3 v) {
  const unsigned bits = v.__x;
  const unsigned exponent = (bits >> 3) & 0xF, fraction = bits & 0x7;
  float magnitude;
  if (exponent == 0xF && fraction == 0x7) magnitude = __int_as_float(0x7FC00000);
  else if (exponent == 0) magnitude = 0.0f;  // the bug: subnormals flushed to zero
  else magnitude = ldexpf(float(8 + fraction), int(exponent) - 7 - 3);
  return (bits & 0x80) ? -magnitude : magnitude;
}

__global__ void fp8_matmul_kernel(const __nv_fp8_e4m3* __restrict__ a, const __nv_fp8_e4m3* __restrict__ b,
                                  const float* __restrict__ a_scale, const float* __restrict__ b_scale,
                                  float* __restrict__ y, int64_t M, int64_t K, int64_t N) {
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < M * N; o += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = o / N, j = o % N;
    float acc = 0.0f;
    for (int64_t k = 0; k < K; ++k) acc = fmaf(decode(a[i * K + k]), decode(b[k * N + j]), acc);
    y[o] = acc * a_scale[0] * b_scale[j];
  }
}

void check_cuda(const torch::Tensor& t, const char* what) {
  TORCH_CHECK(t.defined() && t.is_cuda() && t.layout() == at::kStrided, "fp8_matmul: ", what, " must be a dense CUDA tensor");
}

void check_e4m3(const torch::Tensor& t, const char* what) {
  check_cuda(t, what);
  TORCH_CHECK(std::string(c10::toString(t.scalar_type())) == "Float8_e4m3fn", "fp8_matmul: ", what,
              " must be float8_e4m3fn");
}

}  // namespace

torch::Tensor forward(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& a_scale,
                      const torch::Tensor& b_scale) {
  check_e4m3(a, "a");
  check_e4m3(b, "b");
  check_cuda(a_scale, "a_scale");
  check_cuda(b_scale, "b_scale");
  TORCH_CHECK(a_scale.scalar_type() == at::kFloat && b_scale.scalar_type() == at::kFloat,
              "fp8_matmul: the scales must be float32");
  TORCH_CHECK(a.dim() == 2 && b.dim() == 2, "fp8_matmul: a and b must be 2-D");
  const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
  TORCH_CHECK(b.size(0) == K, "fp8_matmul: b must have size(a, 1) rows");
  TORCH_CHECK(a_scale.numel() == 1, "fp8_matmul: a_scale must hold one value");
  TORCH_CHECK(b_scale.dim() == 1 && b_scale.size(0) == N, "fp8_matmul: b_scale must hold one value per column of b");
  TORCH_CHECK(a.device() == b.device() && a.device() == a_scale.device() && a.device() == b_scale.device(),
              "fp8_matmul: all inputs must be on one device");
  const c10::cuda::CUDAGuard guard(a.device());
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const torch::Tensor ac = a.contiguous(), bc = b.contiguous(), sac = a_scale.contiguous(), sbc = b_scale.contiguous();
  torch::Tensor out = torch::empty({M, N}, a_scale.options());
  if (M * N == 0) return out;
  const int blocks = int(std::min<int64_t>((M * N + kThreads - 1) / kThreads, 65535));
  fp8_matmul_kernel<<<blocks, kThreads, 0, stream>>>(
      static_cast<const __nv_fp8_e4m3*>(ac.data_ptr()), static_cast<const __nv_fp8_e4m3*>(bc.data_ptr()),
      sac.data_ptr<float>(), sbc.data_ptr<float>(), out.data_ptr<float>(), M, K, N);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "e4m3 GEMM with per-tensor and per-column scales (CUDA)"); }
