// gauntlet corpus, correct CUDA control: topk (SPEC kernel form 1, .cu, torch.utils.cpp_extension
// style). One block per row; every element's rank is the number of elements ordered before it
// (larger, NaN largest of all, ties by the lower index: a total order, so ranks are distinct), and
// an element of rank r < k writes values[r] and indices[r]. O(N^2) per row but exact, deterministic
// and without shared state between threads. Expected to pass every gate on a CUDA device.
#include <torch/extension.h>

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <tuple>

namespace {

constexpr int kThreads = 256;

// Every dtype's value exactly as a double (the comparisons below are then exact).
__device__ __forceinline__ double load_f(const double* p) { return *p; }
__device__ __forceinline__ double load_f(const float* p) { return *p; }
__device__ __forceinline__ double load_f(const at::Half* p) { return __half2float(*reinterpret_cast<const __half*>(p)); }
__device__ __forceinline__ double load_f(const at::BFloat16* p) {
  return __bfloat162float(*reinterpret_cast<const __nv_bfloat16*>(p));
}

// torch.topk's order: element (a, i) before (b, j) when a is larger (NaN largest), ties by index.
__device__ __forceinline__ bool before(double a, int64_t i, double b, int64_t j) {
  const bool an = isnan(a), bn = isnan(b);
  if (an != bn) return an;
  if (!an && a != b) return a > b;
  return i < j;
}

template <typename scalar_t>
__global__ void topk_rank_kernel(const scalar_t* __restrict__ x, int64_t N, int64_t k, scalar_t* __restrict__ values,
                                 int64_t* __restrict__ indices) {
  const int64_t row = blockIdx.x;
  const scalar_t* r = x + row * N;
  for (int64_t i = threadIdx.x; i < N; i += blockDim.x) {
    const double xi = load_f(r + i);
    int64_t rank = 0;
    for (int64_t j = 0; j < N && rank < k; ++j) rank += before(load_f(r + j), j, xi, i);
    if (rank < k) {
      values[row * k + rank] = r[i];
      indices[row * k + rank] = i;
    }
  }
}

}  // namespace

std::tuple<torch::Tensor, torch::Tensor> forward(const torch::Tensor& x, int64_t k) {
  TORCH_CHECK(x.is_cuda(), "topk: x must be a CUDA tensor");
  TORCH_CHECK(x.scalar_type() == at::kFloat || x.scalar_type() == at::kHalf || x.scalar_type() == at::kBFloat16,
              "topk: x must be float32, float16 or bfloat16");
  TORCH_CHECK(x.dim() == 2, "topk: x must be 2-D [B, N]");
  const int64_t B = x.size(0), N = x.size(1);
  TORCH_CHECK(k >= 0 && k <= N, "topk: k must lie in [0, N]");
  TORCH_CHECK(B <= 2147483647, "topk: too many rows for one grid");
  const c10::cuda::CUDAGuard guard(x.device());
  const torch::Tensor xc = x.contiguous();
  torch::Tensor values = torch::empty({B, k}, xc.options());
  torch::Tensor indices = torch::empty({B, k}, xc.options().dtype(torch::kLong));
  if (B == 0 || k == 0) return {values, indices};
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "topk_cuda_control", [&] {
    topk_rank_kernel<scalar_t><<<static_cast<unsigned>(B), kThreads, 0, stream>>>(
        xc.data_ptr<scalar_t>(), N, k, values.data_ptr<scalar_t>(), indices.data_ptr<int64_t>());
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return {values, indices};
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "topk: the k largest of each row (CUDA)"); }
