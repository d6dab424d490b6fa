// gauntlet corpus, correct CUDA control: int8_matmul (SPEC kernel form 1, .cu,
// torch.utils.cpp_extension style). One thread per output element (grid-stride): the int8 products
// summed in int32 (exact: the schema caps K so no sum passes 2^30), the sum times a_scale and the
// column's b_scale in double and rounded once to float32. Plain loads, no shared-memory tiling: a
// reference, not a fast kernel. Expected to pass every gate on a CUDA device.
#include <torch/extension.h>

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <cstdint>

namespace {

constexpr int kThreads = 256;

__global__ void int8_matmul_kernel(const int8_t* __restrict__ a, const int8_t* __restrict__ b,
                                   const float* __restrict__ a_scale, const float* __restrict__ b_scale,
                                   float* __restrict__ y, int64_t M, int64_t K, int64_t N) {
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < M * N; o += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = o / N, j = o % N;
    int32_t acc = 0;
    for (int64_t k = 0; k < K; ++k) acc += int32_t(a[i * K + k]) * int32_t(b[k * N + j]);
    y[o] = __double2float_rn(static_cast<double>(acc) * static_cast<double>(a_scale[0]) * static_cast<double>(b_scale[j]));
  }
}

void check_cuda(const torch::Tensor& t, at::ScalarType type, const char* what) {
  TORCH_CHECK(t.defined() && t.is_cuda() && t.layout() == at::kStrided, "int8_matmul: ", what, " must be a dense CUDA tensor");
  TORCH_CHECK(t.scalar_type() == type, "int8_matmul: ", what, " has the wrong dtype");
}

}  // namespace

torch::Tensor forward(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& a_scale,
                      const torch::Tensor& b_scale) {
  check_cuda(a, at::kChar, "a");
  check_cuda(b, at::kChar, "b");
  check_cuda(a_scale, at::kFloat, "a_scale");
  check_cuda(b_scale, at::kFloat, "b_scale");
  TORCH_CHECK(a.dim() == 2 && b.dim() == 2, "int8_matmul: a and b must be 2-D");
  const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
  TORCH_CHECK(b.size(0) == K, "int8_matmul: b must have size(a, 1) rows");
  TORCH_CHECK(a_scale.numel() == 1, "int8_matmul: a_scale must hold one value");
  TORCH_CHECK(b_scale.dim() == 1 && b_scale.size(0) == N, "int8_matmul: b_scale must hold one value per column of b");
  TORCH_CHECK(K <= 65536, "int8_matmul: K past 65536 may overflow the int32 accumulator");
  TORCH_CHECK(a.device() == b.device() && a.device() == a_scale.device() && a.device() == b_scale.device(),
              "int8_matmul: all inputs must be on one device");
  const c10::cuda::CUDAGuard guard(a.device());
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const torch::Tensor ac = a.contiguous(), bc = b.contiguous(), sac = a_scale.contiguous(), sbc = b_scale.contiguous();
  torch::Tensor out = torch::empty({M, N}, a_scale.options());
  if (M * N == 0) return out;
  const int blocks = int(std::min<int64_t>((M * N + kThreads - 1) / kThreads, 65535));
  int8_matmul_kernel<<<blocks, kThreads, 0, stream>>>(ac.data_ptr<int8_t>(), bc.data_ptr<int8_t>(), sac.data_ptr<float>(),
                                                      sbc.data_ptr<float>(), out.data_ptr<float>(), M, K, N);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "int8 GEMM with per-tensor and per-column scales (CUDA)"); }
