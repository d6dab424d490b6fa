// The wire frame checksum (src/common/wire.cpp's checksum(): FNV-1a 64 over little-endian 64-bit
// words, then the last bytes) for the Python module worker, loaded through ctypes
// (python/gauntlet_worker/wire.py): the pure-Python loop checks only tens of MB/s.
#include <cstddef>
#include <cstdint>
#include <cstring>

// The state h after the n / 8 whole words at p (the caller passes n a multiple of 8 and hashes a
// payload's last bytes itself): a payload checked in parts, never joined.
extern "C" uint64_t gauntlet_fnv1a64_words(uint64_t h, const unsigned char* p, size_t n) {
  const size_t words = n / 8;
  for (size_t i = 0; i < words; ++i) {
    uint64_t w;
    std::memcpy(&w, p + 8 * i, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    w = __builtin_bswap64(w);
#endif
    h = (h ^ w) * 1099511628211ull;
  }
  return h;
}

extern "C" uint64_t gauntlet_fnv1a64(const unsigned char* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  const size_t words = n / 8;
  for (size_t i = 0; i < words; ++i) {
    uint64_t w;
    std::memcpy(&w, p + 8 * i, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    w = __builtin_bswap64(w);
#endif
    h = (h ^ w) * 1099511628211ull;
  }
  for (size_t i = 8 * words; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}
