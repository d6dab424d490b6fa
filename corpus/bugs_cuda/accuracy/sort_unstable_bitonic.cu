// PLANTED BUG (accuracy), CUDA twin of bugs/accuracy/sort_unstable_introsort.cpp: the control's
// bitonic network (controls_cuda/sort.cu) run on the key alone, the element's position carried
// beside it as a payload instead of being the low word of what is compared. The keys come out
// sorted (NaN last, -0.0 equal to +0.0, padding after everything), but a comparison network is not
// stable: equal keys are swapped by steps that see them as unordered, so among tied keys the values
// come out in the network's order, not the input's. The KernelBench-style check's U[0,1) float32
// keys never tie; the gates' tied keys (all equal, runs, Zipf repeats) do.
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
// positives, -0.0 equal to +0.0, +inf below every NaN, all NaNs equal.
__device__ __forceinline__ uint32_t order_bits(float f) {
  if (isnan(f)) return 0xFFFFFFFFu;
  uint32_t u = __float_as_uint(f);
  if (u == 0x80000000u) u = 0u;
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

template <typename T>
__global__ void init_kernel(const T* __restrict__ keys, int64_t N, int64_t P, uint64_t* __restrict__ word,
                            int64_t* __restrict__ pos) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < P; i += int64_t(gridDim.x) * blockDim.x) {
    const uint64_t bits = i < N ? order_bits(load_f(keys + i)) : 0xFFFFFFFFull;
    word[i] = (bits << 1) | uint64_t(i >= N);  // BUG: the key alone (padding last); ties left to the network
    pos[i] = i;
  }
}

// One step (k, j) of the bitonic network: element i and its partner i ^ j, ascending where i & k == 0.
__global__ void bitonic_step(uint64_t* __restrict__ word, int64_t* __restrict__ pos, int64_t P, int64_t j, int64_t k) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < P; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t l = i ^ j;
    if (l <= i) continue;
    const bool up = (i & k) == 0;
    const uint64_t a = word[i], b = word[l];
    if ((a > b) == up) {
      word[i] = b, word[l] = a;
      const int64_t p = pos[i];
      pos[i] = pos[l], pos[l] = p;
    }
  }
}

template <typename T>
__global__ void gather_kernel(const int64_t* __restrict__ pos, const T* __restrict__ keys,
                              const int64_t* __restrict__ values, int64_t N, T* __restrict__ out_keys,
                              int64_t* __restrict__ out_values) {
  for (int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; j < N; j += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = pos[j];
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
  torch::Tensor position = torch::empty({P}, vc.options());
  uint64_t* w = reinterpret_cast<uint64_t*>(word.data_ptr<int64_t>());
  int64_t* pos = position.data_ptr<int64_t>();
  dispatch_key_dtype(kc.scalar_type(), [&](auto tag) {
    using scalar_t = decltype(tag);
    init_kernel<scalar_t><<<grid_for(P), kThreads, 0, stream>>>(kc.data_ptr<scalar_t>(), N, P, w, pos);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    for (int64_t k = 2; k <= P; k <<= 1)
      for (int64_t j = k >> 1; j > 0; j >>= 1) {
        bitonic_step<<<grid_for(P), kThreads, 0, stream>>>(w, pos, P, j, k);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
      }
    gather_kernel<scalar_t><<<grid_for(N), kThreads, 0, stream>>>(pos, kc.data_ptr<scalar_t>(), vc.data_ptr<int64_t>(), N,
                                                                  out_keys.data_ptr<scalar_t>(),
                                                                  out_values.data_ptr<int64_t>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return {out_keys, out_values};
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "sort by key with values, unstable (CUDA)"); }
