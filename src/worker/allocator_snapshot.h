// device=cuda: a picture of the CUDA caching allocator's segments and blocks, where LibTorch shows it.
#pragma once
#include "cache_fill_plan.h"

#include <string>
#include <vector>

namespace gauntlet::worker {

// Whether this worker was built able to read the allocator's snapshot (LibTorch 2.9+, whose CUDA
// allocator is reachable as c10::getDeviceAllocator(kCUDA), with the CUDA headers its header needs;
// CMakeLists.txt checks by compiling allocator_snapshot.cpp itself).
bool allocator_snapshot_built();

// The cache's segments on the current device, each block with its size and state, in address order;
// `on_fill_stream` marks segments of the legacy default stream (where the worker's copies, the
// kernel's allocations and the poison fills go). False with *why when it cannot be read.
bool read_cache_picture(std::vector<CacheSegmentView>* out, std::string* why);

}  // namespace gauntlet::worker
