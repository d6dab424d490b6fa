// A tensor's whole storage across host and device: byte snapshots and overlap (batched device copies: case_transfers.h).
#pragma once
#include <ATen/ATen.h>

#include <string>

namespace gauntlet::worker {

// Whether the storages of `a` and `b` share any byte (false when either has none).
bool overlaps(const at::Tensor& a, const at::Tensor& b);

// The bytes of the tensor's whole storage, read back to the host from a CUDA tensor.
std::string storage_bytes(const at::Tensor& t);

}  // namespace gauntlet::worker
