// CLOCK_MONOTONIC in nanoseconds: host-wide, so a parent and its children (no time namespace) compare stamps.
#pragma once
#include <time.h>

#include <cstdint>

namespace gauntlet {

inline int64_t monotonic_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec;
}

}  // namespace gauntlet
