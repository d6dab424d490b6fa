// gauntlet corpus, correct CUDA control: hash_join (SPEC kernel form 1, .cu, torch.utils.cpp_extension
// style). Every (i, j) with left[i] == right[j], by (i, j). Build: the right rows radix-sorted by key
// with their row numbers (cub::DeviceRadixSort::SortPairs is stable, so a key's rows stay in
// ascending j), and each distinct key inserted once into an open-addressing hash table (linear
// probing, a slot claimed by atomicCAS on its own state word, so every int64 key, INT64_MIN and
// INT64_MAX included, is a valid key: no key value is a sentinel) with its run [begin, end) of the
// sorted rows. Probe: each left row finds its key's run (its match count), an exclusive scan of the
// counts places each row's pairs, and each left row writes its pairs in ascending j. P (one int64)
// is all that comes to the host, to allocate the [P, 2] output. Deterministic (the table's slots
// differ between runs, the output does not). Expected to pass every gate on a CUDA device
// (every gate passed on the H100, seed 1, 2026-12-05).
#include <torch/extension.h>

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cstdint>

namespace {

constexpr int kThreads = 256;

unsigned grid_for(int64_t n) { return unsigned((n + kThreads - 1) / kThreads); }

// splitmix64's finalizer: zipf keys scattered over a range still spread over the slots.
__device__ __forceinline__ uint64_t mix(int64_t key) {
  uint64_t z = uint64_t(key) + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The first position in sorted[0, M) whose key is above `key`.
__device__ __forceinline__ int64_t upper_bound(const int64_t* sorted, int64_t M, int64_t key) {
  int64_t lo = 0, hi = M;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (sorted[mid] <= key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// One thread per sorted right row; a run's first row inserts its key with [begin, end).
__global__ void build_kernel(const int64_t* __restrict__ sorted, int64_t M, int* __restrict__ used,
                             int64_t* __restrict__ slot_key, int64_t* __restrict__ slot_begin,
                             int64_t* __restrict__ slot_end, uint64_t mask) {
  const int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= M || (t > 0 && sorted[t] == sorted[t - 1])) return;
  const int64_t key = sorted[t];
  for (uint64_t h = mix(key) & mask;; h = (h + 1) & mask) {
    if (atomicCAS(used + h, 0, 1) != 0) continue;  // taken by another key (each key inserts once)
    slot_key[h] = key;
    slot_begin[h] = t;
    slot_end[h] = upper_bound(sorted, M, key);
    return;
  }
}

// One thread per left row: its key's run in the sorted right rows (count 0 when absent).
__global__ void probe_kernel(const int64_t* __restrict__ left, int64_t N, const int* __restrict__ used,
                             const int64_t* __restrict__ slot_key, const int64_t* __restrict__ slot_begin,
                             const int64_t* __restrict__ slot_end, uint64_t mask, int64_t* __restrict__ count,
                             int64_t* __restrict__ begin) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= N) return;
  const int64_t key = left[i];
  count[i] = 0;
  begin[i] = 0;
  for (uint64_t h = mix(key) & mask; used[h]; h = (h + 1) & mask)
    if (slot_key[h] == key) {
      count[i] = slot_end[h] - slot_begin[h];
      begin[i] = slot_begin[h];
      return;
    }
}

// One thread per left row: its pairs (i, j) from its offset, j ascending (the sorted run's order).
__global__ void fill_kernel(const int64_t* __restrict__ count, const int64_t* __restrict__ begin,
                            const int64_t* __restrict__ offset, const int64_t* __restrict__ rows, int64_t N,
                            int64_t* __restrict__ out) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= N) return;
  int64_t* o = out + 2 * offset[i];
  for (int64_t t = 0; t < count[i]; ++t) {
    o[2 * t] = i;
    o[2 * t + 1] = rows[begin[i] + t];
  }
}

__global__ void iota_kernel(int64_t* __restrict__ rows, int64_t M) {
  const int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j < M) rows[j] = j;
}

void check_keys(const torch::Tensor& t, const char* name) {
  TORCH_CHECK(t.defined() && t.is_cuda() && t.layout() == at::kStrided, "hash_join: ", name, " must be a dense CUDA tensor");
  TORCH_CHECK(t.scalar_type() == at::kLong, "hash_join: ", name, " must be int64");
  TORCH_CHECK(t.dim() == 1, "hash_join: ", name, " must be 1-D");
  TORCH_CHECK(t.size(0) <= int64_t(INT32_MAX) / 2, "hash_join: ", name, " too long (cub's item count is an int)");
}

}  // namespace

torch::Tensor forward(const torch::Tensor& left, const torch::Tensor& right) {
  check_keys(left, "left");
  check_keys(right, "right");
  TORCH_CHECK(left.device() == right.device(), "hash_join: left and right must be on one device");
  const c10::cuda::CUDAGuard guard(left.device());
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const torch::Tensor lc = left.contiguous(), rc = right.contiguous();
  const int64_t N = lc.size(0), M = rc.size(0);
  const auto opts = lc.options();
  if (N == 0 || M == 0) return torch::empty({0, 2}, opts);
  // Build side sorted with its row numbers.
  torch::Tensor rows_in = torch::empty({M}, opts), keys = torch::empty({M}, opts), rows = torch::empty({M}, opts);
  iota_kernel<<<grid_for(M), kThreads, 0, stream>>>(rows_in.data_ptr<int64_t>(), M);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  torch::Tensor count = torch::empty({N}, opts), begin = torch::empty({N}, opts), offset = torch::empty({N}, opts);
  size_t sort_bytes = 0, scan_bytes = 0;
  C10_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, rc.data_ptr<int64_t>(), keys.data_ptr<int64_t>(),
                                                 rows_in.data_ptr<int64_t>(), rows.data_ptr<int64_t>(), int(M), 0, 64,
                                                 stream));
  C10_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, count.data_ptr<int64_t>(), offset.data_ptr<int64_t>(),
                                               int(N), stream));
  torch::Tensor temp = torch::empty({int64_t(std::max(sort_bytes, scan_bytes)) + 1}, opts.dtype(at::kByte));
  size_t bytes = sort_bytes;
  C10_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.data_ptr(), bytes, rc.data_ptr<int64_t>(), keys.data_ptr<int64_t>(),
                                                 rows_in.data_ptr<int64_t>(), rows.data_ptr<int64_t>(), int(M), 0, 64,
                                                 stream));
  // A table of at least twice the right rows, a power of two: probes stay short.
  int64_t slots = 1;
  while (slots < 2 * M) slots <<= 1;
  const uint64_t mask = uint64_t(slots - 1);
  torch::Tensor used = torch::zeros({slots}, opts.dtype(at::kInt));
  torch::Tensor slot_key = torch::empty({slots}, opts), slot_begin = torch::empty({slots}, opts),
                slot_end = torch::empty({slots}, opts);
  build_kernel<<<grid_for(M), kThreads, 0, stream>>>(keys.data_ptr<int64_t>(), M, used.data_ptr<int>(),
                                                     slot_key.data_ptr<int64_t>(), slot_begin.data_ptr<int64_t>(),
                                                     slot_end.data_ptr<int64_t>(), mask);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  probe_kernel<<<grid_for(N), kThreads, 0, stream>>>(lc.data_ptr<int64_t>(), N, used.data_ptr<int>(),
                                                     slot_key.data_ptr<int64_t>(), slot_begin.data_ptr<int64_t>(),
                                                     slot_end.data_ptr<int64_t>(), mask, count.data_ptr<int64_t>(),
                                                     begin.data_ptr<int64_t>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  bytes = scan_bytes;
  C10_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(temp.data_ptr(), bytes, count.data_ptr<int64_t>(), offset.data_ptr<int64_t>(),
                                               int(N), stream));
  int64_t last[2] = {0, 0};  // the last row's offset and count: P is their sum
  C10_CUDA_CHECK(cudaMemcpyAsync(last, offset.data_ptr<int64_t>() + (N - 1), sizeof(int64_t), cudaMemcpyDeviceToHost, stream));
  C10_CUDA_CHECK(cudaMemcpyAsync(last + 1, count.data_ptr<int64_t>() + (N - 1), sizeof(int64_t), cudaMemcpyDeviceToHost, stream));
  C10_CUDA_CHECK(cudaStreamSynchronize(stream));
  const int64_t P = last[0] + last[1];
  torch::Tensor out = torch::empty({P, 2}, opts);
  if (P > 0) {
    fill_kernel<<<grid_for(N), kThreads, 0, stream>>>(count.data_ptr<int64_t>(), begin.data_ptr<int64_t>(),
                                                      offset.data_ptr<int64_t>(), rows.data_ptr<int64_t>(), N,
                                                      out.data_ptr<int64_t>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "hash_join: (i, j) pairs of equal keys (CUDA)"); }
