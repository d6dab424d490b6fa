// A tensor's whole storage across host and device: byte snapshots and overlap (batched device copies: case_transfers.h).
#pragma once
#include <ATen/ATen.h>

#include <string>

namespace gauntlet::worker {

// Whether the storages of `a` and `b` share any byte (false when either has none).
bool overlaps(const at::Tensor& a, const at::Tensor& b);

// The bytes of a CPU tensor's whole storage (a CUDA tensor's come back through HostBatch, case_transfers.h).
std::string storage_bytes(const at::Tensor& t);

// Whether a CPU tensor's whole storage holds exactly `bytes` (storage_bytes(t) == bytes, uncopied).
bool same_storage_bytes(const at::Tensor& t, const std::string& bytes);

}  // namespace gauntlet::worker
