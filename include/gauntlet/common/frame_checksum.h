// The wire frame checksum, FNV-1a 64 over a payload's little-endian 64-bit words and then its last
// bytes: one definition for the parent (src/common/wire.cpp) and the Python worker's C helper
// (src/pyworker/fnv.cpp, which python/gauntlet_worker/wire.py mirrors for its fallback).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace gauntlet::frame_checksum {

constexpr uint64_t kOffset = 1469598103934665603ull;
constexpr uint64_t kPrime = 1099511628211ull;

// h after the n / 8 whole words at p (the n % 8 last bytes are left to bytes()).
inline uint64_t words(uint64_t h, const unsigned char* p, size_t n) {
  for (size_t i = 0; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    w = __builtin_bswap64(w);
#endif
    h = (h ^ w) * kPrime;
  }
  return h;
}

// h after the n bytes at p, one at a time.
inline uint64_t bytes(uint64_t h, const unsigned char* p, size_t n) {
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * kPrime;
  return h;
}

inline uint64_t of(const unsigned char* p, size_t n) {
  const size_t whole = n / 8 * 8;
  return bytes(words(kOffset, p, whole), p + whole, n - whole);
}

}  // namespace gauntlet::frame_checksum
