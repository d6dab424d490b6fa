// PLANTED BUG (determinism): sum over one dim in two kernels, "overlapped" across two streams. The
// per-chunk partial sums run on a stream the kernel creates itself (cudaStreamNonBlocking, made to
// wait for the current stream so the input is ready); the kernel that adds each slice's partials
// into the output runs on the current stream and never waits for the side stream. The second
// kernel starts while the first runs and reads partials that are not written yet: what the caching
// allocator left there (the gates' poison), so the result changes from call to call and from
// process to process. Each kernel alone is exact and in a fixed order. Measured on an H100: the
// race is lost almost every time, at any number of hardware queues, one included (a single queue
// still lets consecutive kernels of two streams run at once), so most gates see it.
#include <torch/extension.h>

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace {

constexpr int kThreads = 256;
constexpr int64_t kChunk = 1024;  // elements a partial; 4 a thread

__device__ __forceinline__ float load_f(const float* p) { return *p; }
__device__ __forceinline__ float load_f(const double* p) { return static_cast<float>(*p); }
__device__ __forceinline__ float load_f(const at::Half* p) { return __half2float(*reinterpret_cast<const __half*>(p)); }
__device__ __forceinline__ float load_f(const at::BFloat16* p) {
  return __bfloat162float(*reinterpret_cast<const __nv_bfloat16*>(p));
}
__device__ __forceinline__ void store_f(float* p, float v) { *p = v; }
__device__ __forceinline__ void store_f(double* p, float v) { *p = v; }
__device__ __forceinline__ void store_f(at::Half* p, float v) { *reinterpret_cast<__half*>(p) = __float2half_rn(v); }
__device__ __forceinline__ void store_f(at::BFloat16* p, float v) {
  *reinterpret_cast<__nv_bfloat16*>(p) = __float2bfloat16_rn(v);
}

// One block a (slice, chunk): the chunk's sum by a fixed tree, into partials[slice * chunks + chunk].
template <typename T>
__global__ void partial_kernel(const T* __restrict__ x, float* __restrict__ partials, int64_t slices, int64_t K,
                               int64_t inner, int64_t chunks) {
  __shared__ float sh[kThreads];
  for (int64_t b = blockIdx.x; b < slices * chunks; b += gridDim.x) {
    const int64_t s = b / chunks, c = b % chunks;
    const int64_t base = (s / inner) * K * inner + (s % inner);
    float v = 0.0f;
    const int64_t end = (c + 1) * kChunk < K ? (c + 1) * kChunk : K;
    for (int64_t k = c * kChunk + threadIdx.x; k < end; k += kThreads)
      v += load_f(x + base + k * inner);
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int w = kThreads / 2; w > 0; w >>= 1) {
      if (int(threadIdx.x) < w) sh[threadIdx.x] += sh[threadIdx.x + w];
      __syncthreads();
    }
    if (threadIdx.x == 0) partials[b] = sh[0];
    __syncthreads();
  }
}

// One thread a slice: its partials added in chunk order.
template <typename T>
__global__ void finish_kernel(const float* __restrict__ partials, T* __restrict__ y, int64_t slices, int64_t chunks) {
  for (int64_t s = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; s < slices; s += int64_t(blockDim.x) * gridDim.x) {
    float acc = 0.0f;
    for (int64_t c = 0; c < chunks; ++c) acc += partials[s * chunks + c];
    store_f(y + s, acc);
  }
}

void check_float_cuda(const torch::Tensor& t) {
  TORCH_CHECK(t.defined(), "input tensor is undefined");
  TORCH_CHECK(t.is_cuda(), "this kernel runs on CUDA tensors only");
  TORCH_CHECK(t.layout() == at::kStrided, "only strided (dense) tensors are supported");
  const auto s = t.scalar_type();
  TORCH_CHECK(s == at::kFloat || s == at::kHalf || s == at::kBFloat16,
              "unsupported dtype: expected float32, float16 or bfloat16");
}

cudaStream_t side_stream() {
  static cudaStream_t s = [] {
    cudaStream_t t = nullptr;
    C10_CUDA_CHECK(cudaStreamCreateWithFlags(&t, cudaStreamNonBlocking));
    return t;
  }();
  return s;
}

}  // namespace

torch::Tensor forward(const torch::Tensor& x, int64_t dim) {
  check_float_cuda(x);
  TORCH_CHECK(x.dim() >= 1, "input must have at least one dimension");
  TORCH_CHECK(dim >= -x.dim() && dim < x.dim(), "dim out of range");
  const int64_t d = dim < 0 ? dim + x.dim() : dim;
  const c10::cuda::CUDAGuard guard(x.device());
  const torch::Tensor xc = x.contiguous();
  std::vector<int64_t> out_sizes;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < xc.dim(); ++i) {
    if (i != d) out_sizes.push_back(xc.size(i));
    if (i < d) outer *= xc.size(i);
    if (i > d) inner *= xc.size(i);
  }
  const int64_t K = xc.size(d), slices = outer * inner;
  torch::Tensor out = torch::empty(out_sizes, xc.options());
  if (slices == 0) return out;
  if (K == 0) return out.zero_();
  const int64_t chunks = (K + kChunk - 1) / kChunk;
  torch::Tensor partials = torch::empty({slices * chunks}, xc.options().dtype(at::kFloat));
  cudaStream_t current = at::cuda::getCurrentCUDAStream();
  cudaStream_t side = side_stream();
  cudaEvent_t ready;
  C10_CUDA_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
  C10_CUDA_CHECK(cudaEventRecord(ready, current));
  C10_CUDA_CHECK(cudaStreamWaitEvent(side, ready, 0));  // the input is ready for the side stream...
  C10_CUDA_CHECK(cudaEventDestroy(ready));
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "sum_side_stream_cuda", [&] {
    const int blocks = int(std::min<int64_t>(slices * chunks, int64_t(1) << 20));
    partial_kernel<scalar_t><<<blocks, kThreads, 0, side>>>(xc.data_ptr<scalar_t>(), partials.data_ptr<float>(), slices,
                                                            K, inner, chunks);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    // BUG: ...but the current stream never waits for the side stream's partials.
    const int finish_blocks = int(std::min<int64_t>((slices + kThreads - 1) / kThreads, 65535));
    finish_kernel<scalar_t><<<finish_blocks, kThreads, 0, current>>>(partials.data_ptr<float>(),
                                                                     out.data_ptr<scalar_t>(), slices, chunks);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "sum with partials on a side stream (CUDA)"); }
