// gauntlet corpus, planted bug (CUDA twin of bugs/*/hash_join_one_row_per_key.cpp): hash_join whose
// build side keeps one row per key. PLANTED BUG: every right row is inserted straight into the
// open-addressing table (no sort, no runs), and a row whose key is already there overwrites the
// slot's row (atomicExch: insert-or-assign, the table of a primary-key lookup). Each left row then
// meets one right row of its key, whichever thread wrote last (so the lost pairs even vary between
// runs): many-to-many matches lose pairs. Exact where the right keys are distinct: the
// KernelBench-style check's keys (uniform over [0, 2^40)) never repeat. Otherwise as the control
// (controls_cuda/hash_join.cu): slots claimed by atomicCAS on a state word, counts scanned, P to
// the host. On the H100 (seed 1) the lost pairs varied between runs, as expected, so layouts,
// determinism and memory ("the result varies from call to call") failed too.
#include <torch/extension.h>

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
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

// One thread per right row: claim an empty slot (state 0 -> 1), write key and row, publish (-> 2);
// a slot already holding the key takes this row instead. BUG: one row per key survives.
__global__ void build_kernel(const int64_t* __restrict__ right, int64_t M, int* __restrict__ used,
                             int64_t* __restrict__ slot_key, int64_t* __restrict__ slot_row, uint64_t mask) {
  const int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= M) return;
  const int64_t key = right[j];
  for (uint64_t h = mix(key) & mask;; h = (h + 1) & mask) {
    if (atomicCAS(used + h, 0, 1) == 0) {
      slot_key[h] = key;
      slot_row[h] = j;
      __threadfence();
      atomicExch(used + h, 2);
      return;
    }
    while (atomicAdd(used + h, 0) == 1) {  // another thread is writing this slot
    }
    __threadfence();
    if (slot_key[h] == key) {
      atomicExch(reinterpret_cast<unsigned long long*>(slot_row + h), static_cast<unsigned long long>(j));  // BUG
      return;
    }
  }
}

// One thread per left row: the one row its key kept (count 1), or none.
__global__ void probe_kernel(const int64_t* __restrict__ left, int64_t N, const int* __restrict__ used,
                             const int64_t* __restrict__ slot_key, const int64_t* __restrict__ slot_row, uint64_t mask,
                             int64_t* __restrict__ count, int64_t* __restrict__ begin) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= N) return;
  const int64_t key = left[i];
  count[i] = 0;
  begin[i] = 0;
  for (uint64_t h = mix(key) & mask; used[h]; h = (h + 1) & mask)
    if (slot_key[h] == key) {
      count[i] = 1;
      begin[i] = slot_row[h];
      return;
    }
}

// One thread per left row: its pair (i, j) from its offset (the one row its key kept).
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
  // Row numbers (the fill kernel reads a pair's j as rows[begin]).
  torch::Tensor rows = torch::empty({M}, opts);
  iota_kernel<<<grid_for(M), kThreads, 0, stream>>>(rows.data_ptr<int64_t>(), M);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  torch::Tensor count = torch::empty({N}, opts), begin = torch::empty({N}, opts), offset = torch::empty({N}, opts);
  size_t scan_bytes = 0;
  C10_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, count.data_ptr<int64_t>(), offset.data_ptr<int64_t>(),
                                               int(N), stream));
  torch::Tensor temp = torch::empty({int64_t(scan_bytes) + 1}, opts.dtype(at::kByte));
  size_t bytes = 0;
  // A table of at least twice the right rows, a power of two: probes stay short.
  int64_t slots = 1;
  while (slots < 2 * M) slots <<= 1;
  const uint64_t mask = uint64_t(slots - 1);
  torch::Tensor used = torch::zeros({slots}, opts.dtype(at::kInt));
  torch::Tensor slot_key = torch::empty({slots}, opts), slot_row = torch::empty({slots}, opts);
  build_kernel<<<grid_for(M), kThreads, 0, stream>>>(rc.data_ptr<int64_t>(), M, used.data_ptr<int>(),
                                                     slot_key.data_ptr<int64_t>(), slot_row.data_ptr<int64_t>(), mask);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  probe_kernel<<<grid_for(N), kThreads, 0, stream>>>(lc.data_ptr<int64_t>(), N, used.data_ptr<int>(),
                                                     slot_key.data_ptr<int64_t>(), slot_row.data_ptr<int64_t>(), mask,
                                                     count.data_ptr<int64_t>(), begin.data_ptr<int64_t>());
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

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "hash_join keeping one right row per key (planted bug, CUDA)"); }
