// gauntlet corpus, correct CUDA control: filter (SPEC kernel form 1, .cu, torch.utils.cpp_extension
// style). x[x > threshold] in input order, as order-preserving stream compaction in blocks of 256:
// per-block kept counts (__syncthreads_count), one block's exclusive scan of them, then each block
// scatters its kept elements from its offset, ranked inside the block by warp ballots (so the order
// is the input's, deterministically). The output's length is the scan's total: that one int64 is
// all that crosses to the host (the size of the output must be known to allocate it, as ATen's own
// masked_select and nonzero sync for it). The comparison is made in double (exact). Expected to pass
// every gate on a CUDA device.
#include <torch/extension.h>

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

namespace {

constexpr int kBlock = 256;  // elements per block, one per thread
constexpr int kWarps = kBlock / 32;
constexpr int kScanThreads = 1024;

__device__ __forceinline__ double load_d(const float* p) { return static_cast<double>(*p); }
__device__ __forceinline__ double load_d(const double* p) { return *p; }
__device__ __forceinline__ double load_d(const at::Half* p) {
  return static_cast<double>(__half2float(*reinterpret_cast<const __half*>(p)));
}
__device__ __forceinline__ double load_d(const at::BFloat16* p) {
  return static_cast<double>(__bfloat162float(*reinterpret_cast<const __nv_bfloat16*>(p)));
}

// NaN > t is false: NaN dropped, as x[x > t] drops it.
template <typename T>
__device__ __forceinline__ bool kept(const T* x, int64_t i, int64_t N, double t) {
  return i < N && load_d(x + i) > t;
}

// Pass 1: kept elements of each block.
template <typename T>
__global__ void count_kernel(const T* __restrict__ x, int64_t N, double t, int64_t* __restrict__ count) {
  const int64_t i = int64_t(blockIdx.x) * kBlock + threadIdx.x;
  const int c = __syncthreads_count(kept(x, i, N, t));
  if (threadIdx.x == 0) count[blockIdx.x] = c;
}

// Pass 2, one block: offset[b] = count[0] + ... + count[b-1], and offset[blocks] the total.
// Chunks of kScanThreads, each a Hillis-Steele scan in shared memory, with a running carry.
__global__ void scan_kernel(const int64_t* __restrict__ count, int64_t blocks, int64_t* __restrict__ offset) {
  __shared__ int64_t sh[kScanThreads];
  int64_t carry = 0;
  for (int64_t base = 0; base < blocks; base += kScanThreads) {
    const int64_t b = base + threadIdx.x;
    const int64_t own = b < blocks ? count[b] : 0;
    sh[threadIdx.x] = own;
    __syncthreads();
    for (int s = 1; s < kScanThreads; s <<= 1) {
      const int64_t add = int(threadIdx.x) >= s ? sh[threadIdx.x - s] : 0;
      __syncthreads();
      sh[threadIdx.x] += add;
      __syncthreads();
    }
    if (b < blocks) offset[b] = carry + sh[threadIdx.x] - own;
    carry += sh[kScanThreads - 1];
    __syncthreads();
  }
  if (threadIdx.x == 0) offset[blocks] = carry;
}

// Pass 3: each block writes its kept elements from offset[block], in order: a thread's rank is the
// kept threads before it in its warp (ballot) plus the kept elements of the earlier warps.
template <typename T>
__global__ void scatter_kernel(const T* __restrict__ x, int64_t N, double t, const int64_t* __restrict__ offset,
                               T* __restrict__ y) {
  __shared__ int warp_count[kWarps];
  __shared__ int warp_base[kWarps];
  const int64_t i = int64_t(blockIdx.x) * kBlock + threadIdx.x;
  const bool k = kept(x, i, N, t);
  const unsigned ballot = __ballot_sync(0xffffffffu, k);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_count[warp] = __popc(ballot);
  __syncthreads();
  if (threadIdx.x == 0) {
    int run = 0;
    for (int w = 0; w < kWarps; ++w) warp_base[w] = run, run += warp_count[w];
  }
  __syncthreads();
  if (k) y[offset[blockIdx.x] + warp_base[warp] + __popc(ballot & ((1u << lane) - 1u))] = x[i];
}

void check_float_cuda(const torch::Tensor& t) {
  TORCH_CHECK(t.defined(), "input tensor is undefined");
  TORCH_CHECK(t.is_cuda(), "this kernel runs on CUDA tensors only");
  TORCH_CHECK(t.layout() == at::kStrided, "only strided (dense) tensors are supported");
  const auto s = t.scalar_type();
  TORCH_CHECK(s == at::kFloat || s == at::kHalf || s == at::kBFloat16,
              "unsupported dtype: expected float32, float16 or bfloat16");
}

}  // namespace

torch::Tensor forward(const torch::Tensor& x, double threshold) {
  check_float_cuda(x);
  TORCH_CHECK(x.dim() == 1, "filter: x must be 1-D [N]");
  const c10::cuda::CUDAGuard guard(x.device());
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const torch::Tensor xc = x.contiguous();
  const int64_t N = xc.size(0);
  if (N == 0) return torch::empty({0}, xc.options());
  const int64_t blocks = (N + kBlock - 1) / kBlock;  // every element in some block, the last one partial
  torch::Tensor count = torch::empty({blocks}, xc.options().dtype(at::kLong));
  torch::Tensor offset = torch::empty({blocks + 1}, xc.options().dtype(at::kLong));
  int64_t total = 0;
  torch::Tensor out;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "filter_cuda", [&] {
    count_kernel<scalar_t><<<unsigned(blocks), kBlock, 0, stream>>>(xc.data_ptr<scalar_t>(), N, threshold,
                                                                     count.data_ptr<int64_t>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    scan_kernel<<<1, kScanThreads, 0, stream>>>(count.data_ptr<int64_t>(), blocks, offset.data_ptr<int64_t>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    C10_CUDA_CHECK(cudaMemcpyAsync(&total, offset.data_ptr<int64_t>() + blocks, sizeof(int64_t),
                                   cudaMemcpyDeviceToHost, stream));
    C10_CUDA_CHECK(cudaStreamSynchronize(stream));
    out = torch::empty({total}, xc.options());
    if (total > 0) {
      scatter_kernel<scalar_t><<<unsigned(blocks), kBlock, 0, stream>>>(
          xc.data_ptr<scalar_t>(), N, threshold, offset.data_ptr<int64_t>(), out.data_ptr<scalar_t>());
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
  });
  return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "filter: x[x > threshold] (CUDA)"); }
