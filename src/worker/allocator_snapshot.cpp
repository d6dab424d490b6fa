// device=cuda: the CUDA caching allocator's segments and blocks, read from its snapshot (allocator_snapshot.h).
// Compiled with GAUNTLET_HAVE_ALLOCATOR_SNAPSHOT=1 only where CMakeLists.txt's check compiled this
// very file so; elsewhere (LibTorch before 2.9, or no CUDA headers) it reports that it cannot.
#include "allocator_snapshot.h"

#if GAUNTLET_HAVE_ALLOCATOR_SNAPSHOT
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/cuda/CUDACachingAllocator.h>

#include <exception>
#endif


namespace gauntlet::worker {

#if GAUNTLET_HAVE_ALLOCATOR_SNAPSHOT
bool allocator_snapshot_built() { return true; }

bool read_cache_picture(std::vector<CacheSegmentView>* out, std::string* why) {
  out->clear();
  try {
    // Every CUDA device allocator c10 registers (the native caching allocator, cudaMallocAsync's,
    // a pluggable one) is a CUDAAllocator; a static cast needs no type information at link time.
    auto* cuda = static_cast<c10::cuda::CUDACachingAllocator::CUDAAllocator*>(
        c10::getDeviceAllocator(c10::DeviceType::CUDA));
    if (!cuda) {
      *why = "no CUDA device allocator is registered";
      return false;
    }
    // The defaults: the ordinary pool, and no traces beyond what history recording keeps (none:
    // the worker never turns it on).
    const auto snapshot = cuda->snapshot();
    for (const auto& segment : snapshot.segments) {
      CacheSegmentView view;
      view.address = uint64_t(segment.address);
      view.on_fill_stream = segment.stream == nullptr;
      view.private_pool = segment.owner_private_pool_id.first != 0 || segment.owner_private_pool_id.second != 0;
      for (const auto& block : segment.blocks)
        view.blocks.push_back({int64_t(block.size), bool(block.allocated), bool(block.active)});
      out->push_back(std::move(view));
    }
    return true;
  } catch (const std::exception& e) {
    *why = std::string("the allocator's snapshot failed: ") + e.what();
    return false;
  }
}
#else
bool allocator_snapshot_built() { return false; }

bool read_cache_picture(std::vector<CacheSegmentView>* out, std::string* why) {
  out->clear();
  *why = "built without the CUDA caching allocator's snapshot (LibTorch before 2.9, or no CUDA headers)";
  return false;
}
#endif

}  // namespace gauntlet::worker
