// gauntlet corpus, correct CUDA control: sort (SPEC kernel form 1, .cu, torch.utils.cpp_extension
// style). Stable ascending sort by key, values permuted alike, as a bitonic network over one 64-bit
// word per element: the key's order bits (float bits flipped so unsigned order is float order; every
// NaN the largest, -0.0 taken as +0.0) above the element's position. A comparison network is not
// stable on its own; with the position as the low word no two words are equal, so the network's
// answer is the unique stable order (torch.sort(stable=True)). The length is padded to a power of
// two with words above every real one. Keys and values are then gathered by the positions. Expected
// to pass every gate on a CUDA device.
#include <torch/extension.h>

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float load_f(const float* p) { return *p; }
__device__ __forceinline__ float load_f(const at::Half* p) { return __half2float(*reinterpret_cast<const __half*>(p)); }
__device__ __forceinline__ float load_f(const at::BFloat16* p) {
  return __bfloat162float(*reinterpret_cast<const __nv_bfloat16*>(p));
}

// Unsigned order of a float (float16/bfloat16 widen to float exactly): negatives reversed below the
// positives, -0.0 equal to +0.0, +inf below every NaN, all NaNs equal (then kept in input order).
__device__ __forceinline__ uint32_t order_bits(float f) {
  if (isnan(f)) return 0xFFFFFFFFu;
  uint32_t u = __float_as_uint(f);
  if (u == 0x80000000u) u = 0u;
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

template <typename T>
__global__ void init_kernel(const T* __restrict__ keys, int64_t N, int64_t P, uint64_t* __restrict__ word) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < P; i += int64_t(gridDim.x) * blockDim.x) {
    const uint64_t bits = i < N ? order_bits(load_f(keys + i)) : 0xFFFFFFFFull;  // padding: position >= N breaks the tie
    word[i] = (bits << 32) | uint64_t(i);
  }
}

// One step (k, j) of the bitonic network: element i and its partner i ^ j, ascending where i & k == 0.
__global__ void bitonic_step(uint64_t* __restrict__ word, int64_t P, int64_t j, int64_t k) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < P; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t l = i ^ j;
    if (l <= i) continue;
    const bool up = (i & k) == 0;
    const uint64_t a = word[i], b = word[l];
    if ((a > b) == up) word[i] = b, word[l] = a;
  }
}

template <typename T>
__global__ void gather_kernel(const uint64_t* __restrict__ word, const T* __restrict__ keys,
                              const int64_t* __restrict__ values, int64_t N, T* __restrict__ out_keys,
                              int64_t* __restrict__ out_values) {
  for (int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; j < N; j += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = int64_t(word[j] & 0xFFFFFFFFull);
    out_keys[j] = keys[i];
    out_values[j] = values[i];
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

// The three key dtypes only (the order bits are a float's; float64 keys were refused above).
template <typename F>
void dispatch_key_dtype(at::ScalarType st, F&& f) {
  switch (st) {
    case at::kFloat: f(float{}); break;
    case at::kHalf: f(at::Half{}); break;
    case at::kBFloat16: f(at::BFloat16{}); break;
    default: TORCH_CHECK(false, "sort: keys must be float32, float16 or bfloat16");
  }
}

unsigned grid_for(int64_t n) { return unsigned(std::min<int64_t>((n + kThreads - 1) / kThreads, 65535)); }

}  // namespace

std::vector<torch::Tensor> forward(const torch::Tensor& keys, const torch::Tensor& values) {
  check_float_cuda(keys);
  TORCH_CHECK(keys.dim() == 1, "sort: keys must be 1-D [N]");
  TORCH_CHECK(values.defined() && values.is_cuda() && values.device() == keys.device(),
              "sort: values must be a CUDA tensor on the keys' device");
  TORCH_CHECK(values.layout() == at::kStrided && values.scalar_type() == at::kLong, "sort: values must be dense int64");
  TORCH_CHECK(values.dim() == 1 && values.size(0) == keys.size(0), "sort: values must be 1-D with as many elements as keys");
  TORCH_CHECK(keys.size(0) < (int64_t(1) << 32), "sort: at most 2^32 - 1 elements (positions are 32-bit)");
  const c10::cuda::CUDAGuard guard(keys.device());
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const torch::Tensor kc = keys.contiguous(), vc = values.contiguous();
  const int64_t N = kc.size(0);
  torch::Tensor out_keys = torch::empty({N}, kc.options());
  torch::Tensor out_values = torch::empty({N}, vc.options());
  if (N == 0) return {out_keys, out_values};
  int64_t P = 1;
  while (P < N) P <<= 1;
  torch::Tensor word = torch::empty({P}, vc.options());  // 64-bit words on the device
  uint64_t* w = reinterpret_cast<uint64_t*>(word.data_ptr<int64_t>());
  dispatch_key_dtype(kc.scalar_type(), [&](auto tag) {
    using scalar_t = decltype(tag);
    init_kernel<scalar_t><<<grid_for(P), kThreads, 0, stream>>>(kc.data_ptr<scalar_t>(), N, P, w);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    for (int64_t k = 2; k <= P; k <<= 1)
      for (int64_t j = k >> 1; j > 0; j >>= 1) {
        bitonic_step<<<grid_for(P), kThreads, 0, stream>>>(w, P, j, k);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
      }
    gather_kernel<scalar_t><<<grid_for(N), kThreads, 0, stream>>>(w, kc.data_ptr<scalar_t>(), vc.data_ptr<int64_t>(), N,
                                                                  out_keys.data_ptr<scalar_t>(),
                                                                  out_values.data_ptr<int64_t>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return {out_keys, out_values};
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "stable sort by key with values (CUDA)"); }
