// The wire frame checksum (include/gauntlet/common/frame_checksum.h) for the Python module worker, loaded
// through ctypes (python/gauntlet_worker/wire.py): the pure-Python loop checks only tens of MB/s.
#include "gauntlet/common/frame_checksum.h"

// The state h after the n / 8 whole words at p (the caller passes n a multiple of 8 and hashes a
// payload's last bytes itself): a payload checked in parts, never joined.
extern "C" uint64_t gauntlet_fnv1a64_words(uint64_t h, const unsigned char* p, size_t n) {
  return gauntlet::frame_checksum::words(h, p, n);
}
