// A tensor's whole storage across host and device: device copies, byte snapshots, host mirrors, overlap.
#pragma once
#include <ATen/ATen.h>

#include <string>

namespace gauntlet::worker {

// A CUDA tensor with the CPU tensor's sizes, strides, storage offset and whole storage bytes (so
// layout-gate inputs keep their strides, and bytes outside the view are carried as well).
at::Tensor to_cuda_same_layout(const at::Tensor& cpu);

// Whether the storages of `a` and `b` share any byte (false when either has none).
bool overlaps(const at::Tensor& a, const at::Tensor& b);

// The bytes of the tensor's whole storage, read back to the host from a CUDA tensor.
std::string storage_bytes(const at::Tensor& t);

// A CPU tensor over a copy of a device tensor's whole storage, with its sizes, strides and offset.
at::Tensor host_mirror(const at::Tensor& t);

}  // namespace gauntlet::worker
