// PLANTED BUG (accumulation): a float16 scatter_add with float16 atomics. The kernel takes float16
// x (its manifest declares float16 only) and atomicAdd's every term straight into its float16
// output bucket (atomicAdd on __half: no float32 scratch, no second pass), so each addition rounds
// to float16's 11 significant bits. A handful of terms per bucket (a KernelBench-style check:
// uniform indices over 64 buckets, values in [0, 1)) stays far inside allclose's 1e-2; a hot
// bucket of many terms (zipf or all-equal indices) drifts by many float16 ulps of its partial
// sums, beyond the float32-accumulator bound the schema declares, and an integer sum past 2048
// stalls, as the accumulation gate's exact sum shows. CUDA twin of
// bugs/accumulation/scatter_add_half_atomics; written ahead of its first GPU run.
#include <torch/extension.h>

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

namespace {

constexpr int kThreads = 256;

__global__ void scatter_half_kernel(const __half* __restrict__ x, const int64_t* __restrict__ idx, __half* __restrict__ out,
                                    int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    atomicAdd(out + idx[i], x[i]);
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

}  // namespace

torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& index, int64_t size) {
  TORCH_CHECK(x.defined() && x.is_cuda(), "scatter_add: x must be a CUDA tensor");
  TORCH_CHECK(x.layout() == at::kStrided, "scatter_add: x must be a dense tensor");
  TORCH_CHECK(x.scalar_type() == at::kHalf, "scatter_add: this kernel takes float16 x");
  TORCH_CHECK(x.dim() == 1, "scatter_add: x must be 1-D [N]");
  TORCH_CHECK(size >= 0, "scatter_add: size must not be negative");
  const c10::cuda::CUDAGuard guard(x.device());
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const torch::Tensor ic = index.contiguous();
  check_keys(ic, x, size, stream);
  const torch::Tensor xc = x.contiguous();
  const int64_t N = xc.size(0);
  // The output itself is the accumulator: zeroed, then every term atomicAdd'ed into it in float16.
  torch::Tensor out = torch::zeros({size}, xc.options());
  if (size == 0 || N == 0) return out;
  scatter_half_kernel<<<grid_for(N), kThreads, 0, stream>>>(reinterpret_cast<const __half*>(xc.data_ptr<at::Half>()),
                                                             ic.data_ptr<int64_t>(),
                                                             reinterpret_cast<__half*>(out.data_ptr<at::Half>()), N);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "scatter_add with float16 atomics (CUDA, planted bug)"); }
