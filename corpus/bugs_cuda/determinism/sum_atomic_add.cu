// PLANTED BUG (determinism): sum over one dim split into 64-element chunks, one block per (slice,
// chunk); each block reduces its chunk in float and atomicAdd's the partial into a zeroed float32
// accumulator per output, then the accumulator is rounded to the output dtype. The order in which
// blocks reach the atomic changes from run to run, and float addition is not associative, so for
// rows of more than two chunks (K > 128) the low bits of the result differ between identical
// calls. Every result is within the float32-accumulator tolerance; rows of K <= 128 (one or two
// partials, 0 + a + b = 0 + b + a) are bitwise stable, so the statelessness gate's small A, B, A'
// repeats agree. CUDA counterpart of corpus/bugs/determinism/sum_split_k_threads.cpp.
#include <torch/extension.h>

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math_constants.h>

#include <algorithm>
#include <cstdint>

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ double load_d(const float* p) { return static_cast<double>(*p); }
__device__ __forceinline__ double load_d(const double* p) { return *p; }
__device__ __forceinline__ double load_d(const at::Half* p) {
  return static_cast<double>(__half2float(*reinterpret_cast<const __half*>(p)));
}
__device__ __forceinline__ double load_d(const at::BFloat16* p) {
  return static_cast<double>(__bfloat162float(*reinterpret_cast<const __nv_bfloat16*>(p)));
}

// double -> float rounded toward zero, then the last bit set when inexact (round to odd): the
// float -> 16-bit round-to-nearest-even that follows is then the correct rounding of d (no
// double rounding).
__device__ __forceinline__ float round_to_odd_float(double d) {
  float f = __double2float_rz(d);
  if (isfinite(d) && static_cast<double>(f) != d) f = __uint_as_float(__float_as_uint(f) | 1u);
  return f;
}
__device__ __forceinline__ void store_d(float* p, double d) { *p = __double2float_rn(d); }
__device__ __forceinline__ void store_d(double* p, double d) { *p = d; }
__device__ __forceinline__ void store_d(at::Half* p, double d) {
  *reinterpret_cast<__half*>(p) = __float2half_rn(round_to_odd_float(d));
}
__device__ __forceinline__ void store_d(at::BFloat16* p, double d) {
  *reinterpret_cast<__nv_bfloat16*>(p) = __float2bfloat16_rn(round_to_odd_float(d));
}

// max that propagates NaN (fmax would drop it)
__device__ __forceinline__ double nan_max(double a, double b) {
  if (isnan(a)) return a;
  if (isnan(b)) return b;
  return b > a ? b : a;
}

// Fixed-shape tree reductions over the block: the same order every call (bitwise deterministic).
__device__ double block_sum(double v, double* sh) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (int(threadIdx.x) < s) sh[threadIdx.x] += sh[threadIdx.x + s];
    __syncthreads();
  }
  const double r = sh[0];
  __syncthreads();
  return r;
}
__device__ double block_max(double v, double* sh) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (int(threadIdx.x) < s) sh[threadIdx.x] = nan_max(sh[threadIdx.x], sh[threadIdx.x + s]);
    __syncthreads();
  }
  const double r = sh[0];
  __syncthreads();
  return r;
}
constexpr int kChunk = 64;  // elements per block; blockDim.x == kChunk

template <typename T>
__global__ void partial_sum_kernel(const T* __restrict__ x, float* __restrict__ acc, int64_t slices, int64_t K,
                                   int64_t inner, int64_t chunks) {
  __shared__ float sh[kChunk];
  const int64_t total = slices * chunks;
  for (int64_t b = blockIdx.x; b < total; b += gridDim.x) {
    const int64_t s = b / chunks, c = b % chunks;
    const int64_t base = (s / inner) * K * inner + (s % inner);
    const int64_t k = c * kChunk + threadIdx.x;
    sh[threadIdx.x] = k < K ? float(load_d(x + base + k * inner)) : 0.0f;
    __syncthreads();
    for (int w = kChunk / 2; w > 0; w >>= 1) {
      if (int(threadIdx.x) < w) sh[threadIdx.x] += sh[threadIdx.x + w];
      __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(acc + s, sh[0]);  // BUG: arrival order decides the rounding
    __syncthreads();
  }
}

template <typename T>
__global__ void finish_kernel(const float* __restrict__ acc, T* __restrict__ y, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x)
    store_d(y + i, static_cast<double>(acc[i]));
}

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

struct Split {
  int64_t outer = 1, K = 1, inner = 1;
};
Split split_at(at::IntArrayRef sizes, int64_t d) {
  Split s;
  for (int64_t i = 0; i < d; ++i) s.outer *= sizes[i];
  s.K = sizes[d];
  for (int64_t i = d + 1; i < int64_t(sizes.size()); ++i) s.inner *= sizes[i];
  return s;
}

int grid_for(int64_t slices) { return int(std::min<int64_t>(slices, 65535)); }
}  // namespace

torch::Tensor forward(const torch::Tensor& x, int64_t dim) {
  check_float_cuda(x);
  const int64_t d = wrap_dim(dim, x.dim());
  const c10::cuda::CUDAGuard guard(x.device());
  const torch::Tensor xc = x.contiguous();
  std::vector<int64_t> out_sizes;
  for (int64_t i = 0; i < xc.dim(); ++i)
    if (i != d) out_sizes.push_back(xc.size(i));
  torch::Tensor out = torch::empty(out_sizes, xc.options());
  const Split sp = split_at(xc.sizes(), d);
  const int64_t slices = sp.outer * sp.inner;
  if (slices == 0) return out;
  torch::Tensor acc = torch::zeros({slices}, xc.options().dtype(at::kFloat));
  const int64_t chunks = (sp.K + kChunk - 1) / kChunk;
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "sum_atomic_cuda", [&] {
    if (chunks > 0) {
      const int blocks = int(std::min<int64_t>(slices * chunks, int64_t(1) << 20));
      partial_sum_kernel<scalar_t><<<blocks, kChunk, 0, stream>>>(xc.data_ptr<scalar_t>(), acc.data_ptr<float>(),
                                                                  slices, sp.K, sp.inner, chunks);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    finish_kernel<scalar_t><<<grid_for((slices + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
        acc.data_ptr<float>(), out.data_ptr<scalar_t>(), slices);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "sum with atomics (CUDA)"); }
