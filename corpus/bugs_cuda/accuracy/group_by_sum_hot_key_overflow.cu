// PLANTED BUG (accuracy): group_by_sum as a hash aggregation with a bounded staging region per key.
// Each row takes a slot of its key by an atomicAdd on the key's counter; every key has cap =
// 1.5 * ceil(N / G) + 8 slots (half again the mean group plus a few: the staging buffer is one
// allocation of G * cap). A row whose slot is past cap is appended to an overflow chain, and the
// overflow chain is never flushed into the sums: the hottest key loses every row beyond its cap.
// Uniform keys (a KernelBench-style check: torch.randint over 64 groups) never come near the cap;
// zipf keys (the hottest holds about N / ln(G) rows) or all-equal keys lose rows. Each group then
// sums its staged slots in double (block tree) and rounds once. CUDA twin of
// bugs/accuracy/group_by_sum_hot_key_overflow; written ahead of its first GPU run.
#include <torch/extension.h>

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

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
template <typename T>
__global__ void stage_kernel(const int64_t* __restrict__ k, const T* __restrict__ v, double* __restrict__ slots,
                             int* __restrict__ count, double* __restrict__ overflow, int64_t* __restrict__ overflow_key,
                             int* __restrict__ overflow_n, int64_t n, int64_t cap) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t g = k[i];
    const int slot = atomicAdd(count + g, 1);
    if (slot < cap) {
      slots[g * cap + slot] = load_d(v + i);
    } else {
      const int o = atomicAdd(overflow_n, 1);
      overflow[o] = load_d(v + i);
      overflow_key[o] = g;
    }
  }
}

template <typename T>
__global__ void sum_slots_kernel(const double* __restrict__ slots, const int* __restrict__ count, T* __restrict__ y,
                                 int64_t groups, int64_t cap) {
  __shared__ double sh[kThreads];
  for (int64_t g = blockIdx.x; g < groups; g += gridDim.x) {
    const int64_t staged = min(int64_t(count[g]), cap);
    double acc = 0.0;
    for (int64_t s = threadIdx.x; s < staged; s += blockDim.x) acc += slots[g * cap + s];
    acc = block_sum(acc, sh);
    if (threadIdx.x == 0) store_d(y + g, acc);
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

// Every key in [0, groups): any violation sets *bad (atomicOr: the verdict is the same whichever
// thread sets it).
__global__ void check_keys_kernel(const int64_t* __restrict__ k, int64_t n, int64_t groups, int* bad) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    if (k[i] < 0 || k[i] >= groups) atomicOr(bad, 1);
}

// The keys' shape and dtype on the host, their values on the device: a one-int flag is all that
// crosses to the host (input validation, as ATen's index_add_ checks its indices), before any
// accumulator is indexed with a key.
void check_keys(const torch::Tensor& keys, const torch::Tensor& values, int64_t groups, cudaStream_t stream) {
  TORCH_CHECK(keys.defined() && keys.is_cuda(), "the keys (indices) must be a CUDA tensor");
  TORCH_CHECK(keys.device() == values.device(), "the keys (indices) must be on the values' device");
  TORCH_CHECK(keys.layout() == at::kStrided, "the keys (indices) must be a dense tensor");
  TORCH_CHECK(keys.scalar_type() == at::kLong, "the keys (indices) must be int64");
  TORCH_CHECK(keys.dim() == 1 && keys.size(0) == values.size(0), "the keys (indices) must be 1-D, one per value");
  const int64_t n = keys.size(0);
  if (n == 0) return;
  torch::Tensor bad = torch::zeros({1}, keys.options().dtype(at::kInt));
  const int blocks = int(std::min<int64_t>((n + kThreads - 1) / kThreads, 1024));
  check_keys_kernel<<<blocks, kThreads, 0, stream>>>(keys.data_ptr<int64_t>(), n, groups, bad.data_ptr<int>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  int host_bad = 0;
  C10_CUDA_CHECK(cudaMemcpyAsync(&host_bad, bad.data_ptr<int>(), sizeof(int), cudaMemcpyDeviceToHost, stream));
  C10_CUDA_CHECK(cudaStreamSynchronize(stream));
  TORCH_CHECK(host_bad == 0, "every key (index) must lie in [0, the output's length)");
}

}  // namespace

torch::Tensor forward(const torch::Tensor& keys, const torch::Tensor& values, int64_t num_groups) {
  check_float_cuda(values);
  TORCH_CHECK(values.dim() == 1, "group_by_sum: values must be 1-D [N]");
  TORCH_CHECK(num_groups >= 0, "group_by_sum: num_groups must not be negative");
  const c10::cuda::CUDAGuard guard(values.device());
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const torch::Tensor kc = keys.contiguous();
  check_keys(kc, values, num_groups, stream);
  const torch::Tensor vc = values.contiguous();
  const int64_t N = vc.size(0);
  torch::Tensor out = torch::empty({num_groups}, vc.options());
  if (num_groups == 0) return out;
  // Half again the mean group size plus a few: enough for any key of a uniform key draw.
  const int64_t mean = (N + num_groups - 1) / num_groups;
  const int64_t cap = mean + mean / 2 + 8;
  const auto f64 = vc.options().dtype(at::kDouble);
  torch::Tensor slots = torch::empty({num_groups * cap}, f64);
  torch::Tensor count = torch::zeros({num_groups}, vc.options().dtype(at::kInt));
  torch::Tensor overflow = torch::empty({std::max<int64_t>(N, 1)}, f64);
  torch::Tensor overflow_key = torch::empty({std::max<int64_t>(N, 1)}, vc.options().dtype(at::kLong));
  torch::Tensor overflow_n = torch::zeros({1}, vc.options().dtype(at::kInt));
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, vc.scalar_type(), "group_by_sum_hot_key_overflow_cuda", [&] {
    if (N > 0) {
      const int blocks = int(std::min<int64_t>((N + kThreads - 1) / kThreads, 4096));
      stage_kernel<scalar_t><<<blocks, kThreads, 0, stream>>>(
          kc.data_ptr<int64_t>(), vc.data_ptr<scalar_t>(), slots.data_ptr<double>(), count.data_ptr<int>(),
          overflow.data_ptr<double>(), overflow_key.data_ptr<int64_t>(), overflow_n.data_ptr<int>(), N, cap);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    sum_slots_kernel<scalar_t><<<int(std::min<int64_t>(num_groups, 65535)), kThreads, 0, stream>>>(
        slots.data_ptr<double>(), count.data_ptr<int>(), out.data_ptr<scalar_t>(), num_groups, cap);
    // The overflow chain was meant to be flushed into out here: it never is.
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "group_by_sum with a bounded staging region (CUDA, planted bug)"); }
