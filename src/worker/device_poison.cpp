// device=cuda: poisons the CUDA caching allocator's free memory before each call (device_poison.h).
#include "device_poison.h"

#include "allocator_snapshot.h"
#include "cache_fill_plan.h"
#include "cuda_rt.h"

#include <ATen/ATen.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 9)
#include <c10/core/CachingDeviceAllocator.h>
#define GAUNTLET_HAVE_DEVICE_ALLOCATOR 1
#endif

namespace gauntlet::worker {
namespace {

constexpr int64_t kMiB = int64_t(1) << 20;
// c10's CUDA caching allocator (CUDACachingAllocator.cpp): requests up to 1 MiB come from 2 MiB
// small-pool segments; larger ones from the large pool, where a request under 10 MiB gets a 20 MiB
// segment and a larger one a segment rounded up to 2 MiB. A free block serves any request of its
// pool that fits (best fit, split), on the stream it was allocated on.
constexpr int64_t kSmallBlock = kMiB, kLargeBlock = 20 * kMiB, kRound = 2 * kMiB;
constexpr int64_t kSmallPoolBytes = 16 * kMiB;  // 8 small segments
constexpr int64_t kMaxBytes = int64_t(4) << 30;

// The bytes a case's poisoning covers: 4x its inputs (outputs and temporaries) and 16 MiB, at most 4 GiB.
int64_t poison_want(int64_t input_bytes) {
  return std::min(kMaxBytes, 4 * std::max<int64_t>(input_bytes, 0) + 16 * kMiB);
}

// The blocks of one poisoning: 1 MiB pairs filling whole small-pool segments, one block of 4x the
// largest input when that is over a large segment, then 20 MiB large-pool blocks up to `want`.
std::vector<at::Tensor> allocate_poison_blocks(int64_t input_bytes, int64_t largest_input_bytes) {
  const auto opts = at::TensorOptions().dtype(at::kByte).device(at::kCUDA);
  const int64_t want = poison_want(input_bytes);
  std::vector<at::Tensor> held;
  try {
    for (int64_t b = 0; b < kSmallPoolBytes; b += kSmallBlock) held.push_back(at::empty({kSmallBlock}, opts));
    const int64_t big = (4 * largest_input_bytes + kRound - 1) / kRound * kRound;
    if (big > kLargeBlock && big <= kMaxBytes) held.push_back(at::empty({big}, opts));
    for (int64_t b = 0; b < std::max<int64_t>(want - kSmallPoolBytes, kLargeBlock); b += kLargeBlock)
      held.push_back(at::empty({kLargeBlock}, opts));
  } catch (const std::exception&) {
    // Out of device memory: poison what was obtained.
  }
  return held;
}

#ifdef GAUNTLET_HAVE_DEVICE_ALLOCATOR
// Whether every byte the cache holds is allocated (by the poison blocks just taken, or by tensors
// the kernel keeps alive): then no free block is left holding an earlier call's data. Index 0 of
// a stat array is the aggregate over pools; a child sees one GPU, as device 0.
bool cache_fully_allocated(c10::DeviceAllocator* allocator) {
  const auto stats = allocator->getDeviceStats(c10::DeviceIndex(0));
  return stats.allocated_bytes[0].current == stats.reserved_bytes[0].current;
}
#endif

bool no_cuda_cache() {
  static const bool no_cache = [] {
    const char* v = std::getenv("PYTORCH_NO_CUDA_MEMORY_CACHING");
    return v && *v && std::string(v) != "0";
  }();
  return no_cache;
}

// What the blocks are sized for: the current case, each size rounded up to a power of two, so
// cases of one size class take the same blocks call after call (they fit the cache they left).
int64_t g_sized_for_input = 0, g_sized_for_largest = 0;

int64_t power_of_two_at_least(int64_t n) {
  int64_t p = kMiB;
  while (p < n && p < kMaxBytes) p *= 2;
  return p;
}

// Seconds poison_cuda_cache spent releasing the cache and taking the blocks afresh, in all.
double g_release_seconds = 0;

// Takes the blocks; when they are not all the cache holds, releases the cache and takes them afresh
// (*release_seconds gains that time).
std::vector<at::Tensor> take_whole_cache(double* release_seconds) {
  std::vector<at::Tensor> held = allocate_poison_blocks(g_sized_for_input, g_sized_for_largest);
#ifndef GAUNTLET_HAVE_DEVICE_ALLOCATOR
  (void)release_seconds;  // no allocator statistics before LibTorch 2.9: the blocks are taken as they come
#else
  try {
    c10::DeviceAllocator* allocator = c10::getDeviceAllocator(c10::DeviceType::CUDA);
    if (!cache_fully_allocated(allocator)) {
      const auto r0 = std::chrono::steady_clock::now();
      held.clear();
      allocator->emptyCache();  // segments with no live block go back to the driver
      held = allocate_poison_blocks(g_sized_for_input, g_sized_for_largest);
      *release_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - r0).count();
    }
  } catch (const std::exception&) {
  }
#endif
  return held;
}

// How the poison reaches the cache's free memory (cuda_poison_method, device_poison.h).
bool g_by_address_failed = false;  // the snapshot or a fill failed once: whole blocks from then on

bool poison_by_address() {
  static const bool chosen = [] {
    const char* v = std::getenv("GAUNTLET_CUDA_POISON");  // "blocks": the older way, for comparisons
    if (v && std::string(v) == "blocks") return false;
    return allocator_snapshot_built();
  }();
  return chosen && !g_by_address_failed;
}

#ifdef GAUNTLET_HAVE_DEVICE_ALLOCATOR
int64_t want_bytes() { return poison_want(g_sized_for_input); }

// Free bytes of a pool (1: small, 2: large) of the allocator's statistics.
int64_t free_pool_bytes(const c10::CachingDeviceAllocator::DeviceStats& stats, int pool) {
  return stats.reserved_bytes[pool].current - stats.allocated_bytes[pool].current;
}

// The free bytes the cache may keep beyond twice a case's blocks before it is released outside the
// turn: each is filled in every later turn (GPU time), while a release and the cudaMallocs that grow
// it again wait on the driver, which other processes' context creation holds. 64 MiB by default;
// GAUNTLET_CUDA_POISON_SLACK_MIB sets it, to measure the trade (docs/gpu.md).
int64_t cache_slack_bytes() {
  static const int64_t slack = [] {
    const char* v = std::getenv("GAUNTLET_CUDA_POISON_SLACK_MIB");
    const long long mib = v && *v ? std::atoll(v) : 64;
    return int64_t(std::max(0LL, mib)) * kMiB;
  }();
  return slack;
}
#endif

// By address: the cache needs free blocks enough for the case (the poison blocks taken once and
// given back), and no more than a few times that, since every free byte of it is filled in the turn
// (a cache left large by an earlier large case is released here, outside the turn).
void shape_cache_for_fills() {
#ifdef GAUNTLET_HAVE_DEVICE_ALLOCATOR
  try {
    c10::DeviceAllocator* allocator = c10::getDeviceAllocator(c10::DeviceType::CUDA);
    const auto stats = allocator->getDeviceStats(c10::DeviceIndex(0));
    if (free_pool_bytes(stats, 0) > 2 * (want_bytes() + 4 * g_sized_for_largest) + cache_slack_bytes())
      allocator->emptyCache();
  } catch (const std::exception&) {
  }
#endif
  allocate_poison_blocks(g_sized_for_input, g_sized_for_largest);  // dropped at once: cached, free
}

// In the turn, by address: when the cache lacks room for the case (a repeat call beside the previous
// call's outputs, with no turn given back between), the blocks are taken first, a driver call that
// counts as a release in the turn.
void ensure_room_in_turn() {
#ifdef GAUNTLET_HAVE_DEVICE_ALLOCATOR
  try {
    const auto stats = c10::getDeviceAllocator(c10::DeviceType::CUDA)->getDeviceStats(c10::DeviceIndex(0));
    if (free_pool_bytes(stats, 1) >= kSmallPoolBytes / 2 && free_pool_bytes(stats, 2) >= want_bytes() - kSmallPoolBytes)
      return;
  } catch (const std::exception&) {
  }
#endif
  const auto r0 = std::chrono::steady_clock::now();
  allocate_poison_blocks(g_sized_for_input, g_sized_for_largest);
  g_release_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - r0).count();
}

// Fills every free block a later allocation on the legacy default stream can be handed, where it
// lies; -1 when the cache's picture or a fill could not be had (then whole blocks are used instead).
int64_t fill_free_blocks(uint8_t poison) {
  ensure_room_in_turn();
  std::vector<CacheSegmentView> picture;
  std::string why;
  if (!read_cache_picture(&picture, &why)) return -1;
  int64_t total = 0;
  for (const FillRange& r : free_ranges_to_fill(picture)) {
    if (!cuda_rt::memset_async(reinterpret_cast<void*>(r.address), poison, size_t(r.bytes), &why)) return -1;
    total += r.bytes;
  }
  return total;
}
}  // namespace

DriverMemoryCalls driver_memory_calls() {
  DriverMemoryCalls calls;
#ifdef GAUNTLET_HAVE_DEVICE_ALLOCATOR
  try {
    const auto stats = c10::getDeviceAllocator(c10::DeviceType::CUDA)->getDeviceStats(c10::DeviceIndex(0));
    calls.allocs = stats.num_device_alloc;
    calls.frees = stats.num_device_free;
  } catch (const std::exception&) {
  }
#endif
  return calls;
}

CaseBytes case_input_bytes(const wire::CaseRequest& req) {
  CaseBytes b;
  for (const wire::Arg& a : req.args)
    if (a.kind == wire::Arg::Kind::Tensor && a.tensor.defined() && a.tensor.has_storage()) {
      b.input += int64_t(a.tensor.storage().nbytes());
      b.largest_input = std::max(b.largest_input, int64_t(a.tensor.storage().nbytes()));
    }
  return b;
}

void reserve_poison_blocks(int64_t input_bytes, int64_t largest_input_bytes) {
  if (no_cuda_cache()) return;
  g_sized_for_input = power_of_two_at_least(input_bytes);
  g_sized_for_largest = power_of_two_at_least(largest_input_bytes);
  if (poison_by_address()) return shape_cache_for_fills();
  double outside_turn = 0;
  take_whole_cache(&outside_turn);  // and give the blocks straight back: they now fit the cache exactly
}

int64_t poison_cuda_cache(uint8_t poison, int64_t input_bytes, int64_t largest_input_bytes) {
  if (no_cuda_cache()) return 0;
  // Normally reserve_poison_blocks has made the cache exactly this case's blocks already, outside
  // the GPU turn, so taking them here needs no device allocation or release, and only what this
  // case can be handed out is filled. Only when something is left over (a repeat call after the
  // kernel made a segment) is the cache released here. Released and cudaMalloc'd inside the turn,
  // the cache had been most of a case's GPU turn on the H200 (2.3 of 2.9 ms a case under load:
  // cudaMalloc waits while other processes create contexts); kept at the largest case's size, the
  // fills were (1.3 of 2.0 ms). docs/gpu.md, "Issue 18".
  g_sized_for_input = power_of_two_at_least(input_bytes);
  g_sized_for_largest = power_of_two_at_least(largest_input_bytes);
  if (poison_by_address()) {
    const int64_t filled = fill_free_blocks(poison);
    if (filled >= 0) return filled;
    g_by_address_failed = true;  // and poison this call the older way
  }
  std::vector<at::Tensor> held = take_whole_cache(&g_release_seconds);
  int64_t total = 0;
  std::string error;
  for (at::Tensor& t : held) {
    // cudaMemsetAsync on the legacy default stream, where the blocks were allocated: a few
    // microseconds of host time each, against ATen's fill_ dispatch; fill_ where the runtime is
    // not reachable (or refuses, which then surfaces as fill_'s own error).
    if (!cuda_rt::memset_async(t.data_ptr(), poison, size_t(t.numel()), &error)) t.fill_(int64_t(poison));
    total += t.numel();
  }
  held.clear();  // back to the cache; a later allocation on this stream is ordered after the fills
  return total;
}

double poison_release_seconds_total() { return g_release_seconds; }

const char* cuda_poison_method() {
  if (no_cuda_cache()) return "none (no caching allocator)";
  return poison_by_address() ? "free blocks by address" : "whole blocks from the cache";
}

}  // namespace gauntlet::worker
