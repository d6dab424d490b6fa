// Portable counter-based random numbers: Philox4x32-10 plus distributions built from exact IEEE
// operations only, so a (seed, index) gives identical bits on every compiler and platform.
#pragma once
#include <array>
#include <cstdint>
#include <string>

namespace gauntlet::rng {

// Philox4x32-10 (Salmon et al., SC'11) block for a 64-bit key and a 128-bit counter.
std::array<uint32_t, 4> philox4x32(uint64_t key, uint64_t counter_hi, uint64_t counter_lo);

// Per-case seed from (master seed, kernel hash, gate name, case index): stable across runs and
// platforms (a fixed hash of the bytes, not std::hash).
uint64_t derive_seed(uint64_t master, const std::string& kernel_hash, const std::string& gate,
                     uint64_t case_index);

// Element `index` of stream `stream` under `seed`. Each call is independent (counter-based).
double uniform01(uint64_t seed, uint64_t stream, uint64_t index);    // [0,1), 53 random bits
double uniform_pm1(uint64_t seed, uint64_t stream, uint64_t index);  // (-1,1)
double normal(uint64_t seed, uint64_t stream, uint64_t index);       // N(0,1), polar method
uint64_t below(uint64_t seed, uint64_t stream, uint64_t index, uint64_t n);  // [0,n), unbiased

// out[j] = normal(seed, stream, first + j) for j in [0, count): the same bits, several times
// faster (four lanes of AVX2 where the CPU has it, each lane's rare rejected first attempt redone
// by normal() itself). Tensors of tens of millions of elements are drawn with it.
void normal_fill(uint64_t seed, uint64_t stream, uint64_t first, int64_t count, double* out);

// Natural log using only +,-,*,/ (correctly rounded in IEEE), so results are bitwise portable.
double portable_log(double x);

}  // namespace gauntlet::rng
