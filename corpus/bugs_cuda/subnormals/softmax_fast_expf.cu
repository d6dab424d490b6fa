// PLANTED BUG (subnormals): softmax in float32 with a fast exp written as the PTX that
// --use_fast_math turns expf into, ex2.approx.ftz.f32 of x*log2(e) (plain __expf without -ftz=true
// compiles to the non-flushing ex2.approx.f32 on CUDA 13, measured on the H200: that version
// passed the subnormals gate). With .ftz, results below FLT_MIN (2^-126) are flushed to 0, so probabilities exp(x - max) / sum that are representable float32/bfloat16
// subnormals (x - max between about -103 and -87.3) come back 0. Its error elsewhere (a few ulps,
// growing with |x - max|) stays inside the schema's float32-accumulator tolerance, sums and the
// division are IEEE float32, NaN/Inf propagate as in the control; float16 outputs never reach
// float32's subnormal range. CUDA counterpart of corpus/bugs/subnormals/softmax_exp_no_denormals.cpp.
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
__device__ __forceinline__ float nan_maxf(float a, float b) {
  if (isnan(a)) return a;
  if (isnan(b)) return b;
  return b > a ? b : a;
}
__device__ float block_sumf(float v, float* sh) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (int(threadIdx.x) < s) sh[threadIdx.x] += sh[threadIdx.x + s];
    __syncthreads();
  }
  const float r = sh[0];
  __syncthreads();
  return r;
}
__device__ float block_maxf(float v, float* sh) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (int(threadIdx.x) < s) sh[threadIdx.x] = nan_maxf(sh[threadIdx.x], sh[threadIdx.x + s]);
    __syncthreads();
  }
  const float r = sh[0];
  __syncthreads();
  return r;
}
__device__ __forceinline__ void store_f(float* p, float v) { *p = v; }
__device__ __forceinline__ void store_f(double* p, float v) { *p = v; }
__device__ __forceinline__ void store_f(at::Half* p, float v) { *reinterpret_cast<__half*>(p) = __float2half_rn(v); }
__device__ __forceinline__ void store_f(at::BFloat16* p, float v) {
  *reinterpret_cast<__nv_bfloat16*>(p) = __float2bfloat16_rn(v);
}

// What __expf is under --use_fast_math: the approximate base-2 exponential with flush-to-zero.
__device__ __forceinline__ float fast_exp_ftz(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x * 1.4426950408889634f));
  return r;
}

template <typename T>
__global__ void softmax_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t slices, int64_t K, int64_t inner) {
  __shared__ float sh[kThreads];
  for (int64_t s = blockIdx.x; s < slices; s += gridDim.x) {
    const int64_t base = (s / inner) * K * inner + (s % inner);
    float m = -CUDART_INF_F;
    for (int64_t k = threadIdx.x; k < K; k += blockDim.x) m = nan_maxf(m, float(load_d(x + base + k * inner)));
    m = block_maxf(m, sh);
    float acc = 0.0f;
    for (int64_t k = threadIdx.x; k < K; k += blockDim.x) acc += fast_exp_ftz(float(load_d(x + base + k * inner)) - m);
    const float denom = block_sumf(acc, sh);
    for (int64_t k = threadIdx.x; k < K; k += blockDim.x)
      store_f(y + base + k * inner, fast_exp_ftz(float(load_d(x + base + k * inner)) - m) / denom);  // BUG: ftz exp
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
  torch::Tensor out = torch::empty(xc.sizes(), xc.options());
  const Split sp = split_at(xc.sizes(), d);
  const int64_t slices = sp.outer * sp.inner;
  if (xc.numel() == 0 || slices == 0) return out;
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "softmax_fast_cuda", [&] {
    softmax_kernel<scalar_t><<<grid_for(slices), kThreads, 0, stream>>>(xc.data_ptr<scalar_t>(),
                                                                         out.data_ptr<scalar_t>(), slices, sp.K, sp.inner);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "softmax, fast exp (CUDA)"); }
