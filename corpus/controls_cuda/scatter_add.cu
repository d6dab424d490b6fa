// gauntlet corpus, correct CUDA control: scatter_add (SPEC kernel form 1, .cu,
// torch.utils.cpp_extension style) the way GPU code does it: each block gathers a chunk of terms
// into a small shared-memory table of its buckets (an atomic float add, as a compare-and-swap loop
// on the bits: the hardware float atomicAdd flushes subnormals), then adds each bucket's partial
// once into a float32 bucket in global memory (zeroed float32 scratch of `size` floats, the same
// compare-and-swap add), then one rounding per bucket to x's dtype. A hot bucket (zipf or all-equal
// indices) thus costs one global atomic per block, not one per term: the first version added every
// term into global memory and ran past the 60 s timeout at the timing gate's N = 2^20, all the
// threads of the GPU retrying their compare-and-swap on one address (measured on the H200). The
// order of the atomics is the order threads arrive, so repeated runs may differ in the last bits of
// a bucket holding several terms; the schema declares that ("determinism": "tolerance") and every
// run stays within the float32-accumulator bound. The indices are checked on the device (each in
// [0, size)) and only the one-int verdict comes back to the host. Expected to pass every gate on a
// CUDA device.
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

// atomicAdd on a float, as a compare-and-swap loop on its bits with the addition in ordinary IEEE
// float arithmetic: the hardware float atomicAdd to global memory flushes subnormals to zero
// (docs/gpu.md, measured on the H200 with bugs_cuda/determinism/sum_atomic_add), which the
// subnormals gate rightly rejects; this one keeps them and still adds in arrival order. Works on
// shared and global memory alike.
__device__ __forceinline__ void atomic_add_ieee(float* address, float term) {
  unsigned int* bits = reinterpret_cast<unsigned int*>(address);
  unsigned int seen = *bits, assumed;
  do {
    assumed = seen;
    seen = atomicCAS(bits, assumed, __float_as_uint(__uint_as_float(assumed) + term));
  } while (seen != assumed);
}

constexpr int kTermsPerThread = 8;                      // a block's chunk: 2048 terms
constexpr int kTableSlots = 512;                        // a power of two, twice the threads
constexpr unsigned long long kEmpty = ~0ull;            // no key: keys are checked to lie in [0, size)

// One chunk of kThreads * kTermsPerThread terms per block and round: each term lands in its
// bucket's slot of the block's table (open addressing, linear probing; a full table sends the term
// straight to global memory), then every filled slot goes to global memory once.
template <typename T>
__global__ void scatter_float_kernel(const T* __restrict__ x, const int64_t* __restrict__ idx, float* __restrict__ acc,
                                     int64_t n) {
  __shared__ unsigned long long slot_key[kTableSlots];
  __shared__ float slot_sum[kTableSlots];
  const int64_t chunk = int64_t(kThreads) * kTermsPerThread;
  for (int64_t start = int64_t(blockIdx.x) * chunk; start < n; start += int64_t(gridDim.x) * chunk) {
    for (int s = threadIdx.x; s < kTableSlots; s += blockDim.x) {
      slot_key[s] = kEmpty;
      slot_sum[s] = 0.0f;
    }
    __syncthreads();
    for (int r = 0; r < kTermsPerThread; ++r) {
      const int64_t i = start + int64_t(r) * blockDim.x + threadIdx.x;
      if (i >= n) break;
      const unsigned long long key = static_cast<unsigned long long>(idx[i]);
      const float term = static_cast<float>(load_d(x + i));  // float16/bfloat16 widen exactly
      unsigned int h = static_cast<unsigned int>((key * 0x9E3779B97F4A7C15ull) >> 40) & (kTableSlots - 1);
      bool placed = false;
      for (int probe = 0; probe < kTableSlots && !placed; ++probe, h = (h + 1) & (kTableSlots - 1)) {
        const unsigned long long held = atomicCAS(&slot_key[h], kEmpty, key);
        if (held == kEmpty || held == key) {
          atomic_add_ieee(&slot_sum[h], term);
          placed = true;
        }
      }
      if (!placed) atomic_add_ieee(acc + key, term);
    }
    __syncthreads();
    for (int s = threadIdx.x; s < kTableSlots; s += blockDim.x)
      if (slot_key[s] != kEmpty) atomic_add_ieee(acc + slot_key[s], slot_sum[s]);
    __syncthreads();
  }
}

template <typename T>
__global__ void round_kernel(const float* __restrict__ acc, T* __restrict__ y, int64_t size) {
  for (int64_t v = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; v < size; v += int64_t(gridDim.x) * blockDim.x)
    store_d(y + v, static_cast<double>(acc[v]));  // a float is exact in double: one rounding to T
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

int grid_for(int64_t n) { return int(std::max<int64_t>(1, std::min<int64_t>((n + kThreads - 1) / kThreads, 4096))); }
int grid_for_chunks(int64_t n) {
  const int64_t chunk = int64_t(kThreads) * kTermsPerThread;
  return int(std::max<int64_t>(1, std::min<int64_t>((n + chunk - 1) / chunk, 4096)));
}

}  // namespace

torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& index, int64_t size) {
  check_float_cuda(x);
  TORCH_CHECK(x.dim() == 1, "scatter_add: x must be 1-D [N]");
  TORCH_CHECK(size >= 0, "scatter_add: size must not be negative");
  const c10::cuda::CUDAGuard guard(x.device());
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const torch::Tensor ic = index.contiguous();
  check_keys(ic, x, size, stream);
  const torch::Tensor xc = x.contiguous();
  const int64_t N = xc.size(0);
  torch::Tensor out = torch::empty({size}, xc.options());
  if (size == 0) return out;
  // float32 buckets for every dtype: the schema's float32 accumulator.
  torch::Tensor acc = torch::zeros({size}, xc.options().dtype(at::kFloat));
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "scatter_add_cuda", [&] {
    if (N > 0) {
      scatter_float_kernel<scalar_t><<<grid_for_chunks(N), kThreads, 0, stream>>>(xc.data_ptr<scalar_t>(), ic.data_ptr<int64_t>(),
                                                                            acc.data_ptr<float>(), N);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    round_kernel<scalar_t><<<grid_for(size), kThreads, 0, stream>>>(acc.data_ptr<float>(), out.data_ptr<scalar_t>(), size);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "scatter_add with float atomics (CUDA)"); }
