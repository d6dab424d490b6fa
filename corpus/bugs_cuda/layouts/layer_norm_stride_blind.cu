// PLANTED BUG (layouts): layer_norm that reads x, weight and bias through data_ptr() without
// .contiguous(), as if every tensor were row-major and dense. Right on contiguous inputs (and on
// views with only a storage offset, which data_ptr() includes); wrong on transposed, step-sliced
// and expanded (stride-0) views, where it normalizes the wrong elements (reading past a small
// expanded storage). Otherwise the correct control (one block per row, double, one rounding).
// CUDA twin of corpus/bugs/layouts/layer_norm_stride_blind.cpp.
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
// Row statistics of a length-D row: mean and 1/sqrt(var + eps), two passes in double.
template <typename T>
__device__ void row_stats(const T* row, int64_t D, double eps, double* sh, double* mean, double* rstd) {
  double s = 0.0;
  for (int64_t j = threadIdx.x; j < D; j += blockDim.x) s += load_d(row + j);
  const double mu = block_sum(s, sh) / static_cast<double>(D);
  double q = 0.0;
  for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
    const double c = load_d(row + j) - mu;
    q += c * c;
  }
  const double var = block_sum(q, sh) / static_cast<double>(D);
  *mean = mu;
  *rstd = 1.0 / sqrt(var + eps);
}

template <typename T>
__global__ void layer_norm_forward_kernel(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
                                          T* __restrict__ y, int64_t rows, int64_t D, double eps) {
  __shared__ double sh[kThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* row = x + r * D;
    double mean, rstd;
    row_stats(row, D, eps, sh, &mean, &rstd);
    for (int64_t j = threadIdx.x; j < D; j += blockDim.x)
      store_d(y + r * D + j, (load_d(row + j) - mean) * rstd * load_d(w + j) + load_d(b + j));
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
void check_layer_norm_args(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  check_float_cuda(x);
  check_float_cuda(weight);
  check_float_cuda(bias);
  TORCH_CHECK(weight.scalar_type() == x.scalar_type() && bias.scalar_type() == x.scalar_type(),
              "all floating inputs must have the same dtype");
  TORCH_CHECK(weight.device() == x.device() && bias.device() == x.device(), "all tensors must be on the same device");
  TORCH_CHECK(x.dim() >= 1, "layer_norm: x must have at least one dimension");
  const int64_t D = x.size(-1);
  TORCH_CHECK(D >= 1, "layer_norm: the normalized dim must not be empty");
  TORCH_CHECK(weight.dim() == 1 && weight.size(0) == D, "layer_norm: weight must be 1-D of length D");
  TORCH_CHECK(bias.dim() == 1 && bias.size(0) == D, "layer_norm: bias must be 1-D of length D");
}

}  // namespace

torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias, double eps) {
  check_layer_norm_args(x, weight, bias);
  const c10::cuda::CUDAGuard guard(x.device());
  const torch::Tensor& xc = x;  // BUG: no .contiguous(): strides ignored below
  const torch::Tensor& wc = weight;
  const torch::Tensor& bc = bias;
  torch::Tensor out = torch::empty(x.sizes(), x.options());  // a fresh, contiguous output
  const int64_t D = xc.size(-1);
  const int64_t rows = xc.numel() / D;
  if (rows == 0) return out;
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "layer_norm_cuda", [&] {
    layer_norm_forward_kernel<scalar_t><<<grid_for(rows), kThreads, 0, stream>>>(
        xc.data_ptr<scalar_t>(), wc.data_ptr<scalar_t>(), bc.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), rows, D,
        eps);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "layer_norm over the last dim (CUDA)"); }
