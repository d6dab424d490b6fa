// Which byte ranges of the CUDA caching allocator's cache to poison, from a picture of its segments.
#pragma once
#include <cstdint>
#include <vector>

namespace gauntlet::worker {

// One block of a segment, in address order (the allocator lists a segment's blocks from its base).
struct CacheBlockView {
  int64_t size = 0;
  bool allocated = false;  // held by a live tensor
  bool active = false;     // allocated, or freed but still awaited by another stream's work
};

// One segment (one cudaMalloc) as the allocator's snapshot describes it.
struct CacheSegmentView {
  uint64_t address = 0;
  bool on_fill_stream = false;  // its blocks are handed out on the stream the fills are queued on
  bool private_pool = false;    // a CUDA graph's private pool: never handed to ordinary allocations
  std::vector<CacheBlockView> blocks;
};

struct FillRange {
  uint64_t address = 0;
  int64_t bytes = 0;
};

// The free blocks a later allocation on the fill stream can be handed: every block of an ordinary
// segment of that stream that is neither allocated nor active, at its address (the segment's base
// plus the sizes of the blocks before it). A free block beside a live tensor is among them, which
// taking whole poison blocks from the cache can miss (a remainder smaller than any poison block).
// Segments of other streams are left alone: their blocks go only to allocations on their own stream,
// which a fill queued on this one would not be ordered before.
std::vector<FillRange> free_ranges_to_fill(const std::vector<CacheSegmentView>& segments);

}  // namespace gauntlet::worker
