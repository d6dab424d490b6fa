// The wire frame checksum (FNV-1a 64, src/common/wire.cpp) for the Python module worker, loaded
// through ctypes (python/gauntlet_worker/wire.py): the pure-Python loop checks about 2 MB/s.
#include <cstddef>
#include <cstdint>

extern "C" uint64_t gauntlet_fnv1a64(const unsigned char* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}
