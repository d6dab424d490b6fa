// device=cuda: make memory the kernel gets from c10's CUDA caching allocator read as the poison byte.
#pragma once
#include <cstdint>

#include "gauntlet/common/wire.h"

namespace gauntlet::worker {

// Before a call. Where the worker can read the allocator's snapshot (allocator_snapshot.h: LibTorch
// 2.9+ with CUDA headers at build time), every free block of the legacy default stream's segments is
// filled where it lies (one cudaMemsetAsync each, no allocation in the turn), free blocks beside live
// tensors included, which whole blocks cannot reach; reserve_poison_blocks has given the cache room
// for the case beforehand. Otherwise (and with GAUNTLET_CUDA_POISON=blocks, for comparisons) it
// allocates device blocks in the
// allocator's size classes (1 MiB pairs filling whole 2 MiB small-pool segments, 20 MiB large-pool
// blocks, one block of 4x the largest input), fills them with `poison` (cudaMemsetAsync on the
// legacy default stream, else ATen's fill_) and frees them back to the cache, so allocations made next on that stream (the
// inputs' device copies, the kernel's torch::empty outputs and temporaries) are carved from
// poisoned memory. Where LibTorch exposes the allocator (2.9+: c10::getDeviceAllocator(kCUDA)),
// the blocks must then hold every byte the cache has (allocated_bytes == reserved_bytes), so no
// free block keeps an earlier call's data; when they do not, the cache is released (emptyCache)
// and the blocks taken afresh. The case's `input_bytes` and `largest_input_bytes` size it, each
// rounded up to a power of two (cases of one size class take the same blocks, which fit the cache
// they left): about 4x the
// inputs plus 16 MiB, at most 4 GiB. Best effort: an allocation that fails stops it. No CUDA symbol
// at link time (ATen, and the runtime through cuda_rt). Does nothing when PYTORCH_NO_CUDA_MEMORY_CACHING is set (no cache:
// every allocation is a fresh cudaMalloc; compute-sanitizer children run that way).
// Returns the bytes poisoned (0: none).
int64_t poison_cuda_cache(uint8_t poison, int64_t input_bytes, int64_t largest_input_bytes);

// Before a case's GPU turn: grows the poison blocks for a case of this size and makes them the
// whole cache (releasing and cudaMallocing segments as needed), without filling anything, so that
// poison_cuda_cache in the turn finds its blocks cached. Device allocation and release take
// driver locks that other processes' context creation holds for tens of milliseconds; they need
// no turn, since they run nothing on the GPU.
void reserve_poison_blocks(int64_t input_bytes, int64_t largest_input_bytes);

// The seconds poison_cuda_cache has spent, over the process's life, releasing the cache and taking
// its blocks afresh (driver calls in the GPU turn: what reserve_poison_blocks is there to avoid).
double poison_release_seconds_total();

// The caching allocator's calls to the driver so far (DeviceStats num_device_alloc and
// num_device_free: cudaMalloc or mapping, cudaFree or unmapping); -1 each where LibTorch has no
// device allocator statistics (before 2.9) or they cannot be read.
struct DriverMemoryCalls {
  int64_t allocs = -1, frees = -1;
};
DriverMemoryCalls driver_memory_calls();

// The bytes of a case's tensor arguments' storages, in all and the largest: they size its poisoning.
struct CaseBytes {
  int64_t input = 0, largest_input = 0;
};
CaseBytes case_input_bytes(const wire::CaseRequest& req);

// How the poisoning reaches the cache, for the kernel's environment in reports: "free blocks by
// address", "whole blocks from the cache", or none without a caching allocator.
const char* cuda_poison_method();

}  // namespace gauntlet::worker
