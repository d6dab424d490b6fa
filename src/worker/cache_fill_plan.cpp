// Which byte ranges of the CUDA caching allocator's cache to poison (cache_fill_plan.h).
#include "cache_fill_plan.h"

namespace gauntlet::worker {

std::vector<FillRange> free_ranges_to_fill(const std::vector<CacheSegmentView>& segments) {
  std::vector<FillRange> ranges;
  for (const CacheSegmentView& s : segments) {
    if (!s.on_fill_stream || s.private_pool) continue;
    uint64_t at = s.address;
    const size_t first_of_segment = ranges.size();  // one fill never spans two cudaMallocs
    for (const CacheBlockView& b : s.blocks) {
      if (b.size <= 0) continue;
      if (!b.allocated && !b.active) {
        // The allocator merges neighbouring free blocks, but a picture taken mid-change need not
        // show that: join them here so each run of free bytes is one fill.
        if (ranges.size() > first_of_segment && ranges.back().address + uint64_t(ranges.back().bytes) == at)
          ranges.back().bytes += b.size;
        else
          ranges.push_back({at, b.size});
      }
      at += uint64_t(b.size);
    }
  }
  return ranges;
}

}  // namespace gauntlet::worker
