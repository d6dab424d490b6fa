// PLANTED BUG (accuracy): gelu = 0.5 * x * (1 + erf(x / sqrt(2))) in double, with erf saturated to
// +-1 once |x / sqrt(2)| > 3.5 ("erf is 1 to float precision there", skipping erf for the tails).
// True on the positive side (within 3 float32 ulps), false on the negative side: for x < -4.95
// the kernel returns -0 where gelu(x) = x * Phi(x) is a representable -1.8e-6 ... -1e-44.
// Invisible on [0, 1) and on normal inputs (P(x < -4.95) ~ 4e-7); wrong at scale 1e3 and with
// heavy tails. NaN/Inf unchanged (gelu(-inf) = -inf * 0 = NaN, as PyTorch). CUDA twin of
// corpus/bugs/accuracy/gelu_erf_saturate.cpp.
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
template <typename T>
__global__ void gelu_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t n) {
  const int64_t stride = int64_t(blockDim.x) * gridDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const double v = load_d(x + i);
    const double z = v * 0.70710678118654752440;
    const double e = z > 3.5 ? 1.0 : (z < -3.5 ? -1.0 : erf(z));  // BUG: the negative tail is lost
    store_d(y + i, 0.5 * v * (1.0 + e));
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

torch::Tensor forward(const torch::Tensor& x) {
  check_float_cuda(x);
  const c10::cuda::CUDAGuard guard(x.device());
  const torch::Tensor xc = x.contiguous();
  torch::Tensor out = torch::empty(xc.sizes(), xc.options());
  const int64_t n = xc.numel();
  if (n == 0) return out;
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "gelu_cuda", [&] {
    gelu_kernel<scalar_t><<<grid_for((n + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
        xc.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), n);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "gelu (CUDA)"); }
