// gauntlet corpus, correct CUDA control: group_by_sum (SPEC kernel form 1, .cu,
// torch.utils.cpp_extension style). out[g] sums the values whose key is g: one block per group
// (grid-stride), its threads stride over all N rows and add the values of their group in double,
// a fixed block tree combines them (bitwise deterministic: no atomics, as the schema's bitwise
// determinism asks), one rounding per output (float16/bfloat16 through a round-to-odd float); a
// group no key names gives 0. The keys are checked on the device (each in [0, num_groups)) and only
// the one-int verdict comes back to the host. O(N * G) work: a control, not a fast kernel.
// Expected to pass every gate on a CUDA device.
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
__global__ void group_by_sum_kernel(const int64_t* __restrict__ k, const T* __restrict__ v, T* __restrict__ y,
                                    int64_t n, int64_t groups) {
  __shared__ double sh[kThreads];
  for (int64_t g = blockIdx.x; g < groups; g += gridDim.x) {
    double acc = 0.0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
      if (k[i] == g) acc += load_d(v + i);
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
  // Every output element is written by the kernel, empty groups included.
  torch::Tensor out = torch::empty({num_groups}, vc.options());
  if (num_groups == 0) return out;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, vc.scalar_type(), "group_by_sum_cuda", [&] {
    group_by_sum_kernel<scalar_t><<<int(std::min<int64_t>(num_groups, 65535)), kThreads, 0, stream>>>(
        kc.data_ptr<int64_t>(), vc.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), N, num_groups);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "group_by_sum over int64 keys (CUDA)"); }
