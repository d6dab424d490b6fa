// device=cuda: a case's host<->device copies in batches, each batch waited for once.
#pragma once
#include <ATen/ATen.h>

#include <string>
#include <vector>

namespace gauntlet::worker {

// Every host synchronization in a case's GPU turn is a wait on the GPU; beside a kernel that runs
// past its turn's bound (time-sliced, docs/gpu.md "Issue 18") each one can wait out a time slice
// of the other context. So a case's copies go in two batches: the inputs to the device through one
// pinned staging buffer and one wait, and after the call its outputs (and, after the last call,
// the inputs' storages, to see whether the kernel wrote them) to the host through another, again
// with one wait. The staging buffers persist across cases and grow to the largest case.

// A case's CPU inputs laid out in the page-locked staging buffer for one batch of copies to the
// device: host work only (the bytes copied, the buffer grown), done before the case's GPU turn so
// that the turn holds only the copies themselves. A tensor without storage is staged as nothing
// and goes through .to(kCUDA) in the turn.
struct StagedInputs {
  bool ready = false;            // false: not staged (the turn stages them itself)
  std::vector<at::Tensor> cpu;   // the CPU tensors, as given
  std::vector<size_t> offset;    // where each one's whole storage starts in the staging buffer
};
StagedInputs stage_inputs(const std::vector<at::Tensor>& cpu);

// Device copies of the staged tensors, each with the CPU tensor's sizes, strides, storage offset
// and whole storage bytes (so layout-gate inputs keep their strides, and bytes outside the view are
// carried as well), taken from the caching allocator (after the case's poisoning) and queued on
// the current stream. Not waited for: the kernel's work on the current stream, and on any stream
// that synchronizes with it (the legacy default stream, torch's current stream, synchronizes with
// every blocking stream), runs after them. Only a kernel that launches on a non-blocking stream of
// its own without waiting on the current one could read an input in flight, and that kernel
// races in PyTorch as well, where an input is whatever the current stream last wrote. Beside a
// kernel that overran its turn each wait cost a time slice of its context (docs/gpu.md).
std::vector<at::Tensor> to_cuda_same_layout_all(const StagedInputs& staged);

// Copies from the device queued together and waited for once (wait()). Values: a tensor's
// elements as a contiguous CPU tensor (what .cpu().contiguous().clone() gives); storage: the bytes
// of its whole storage (storage_bytes). CPU tensors are taken as they are, without a device copy.
class HostBatch {
 public:
  // Returns the slot that values(slot) reads after wait().
  size_t add_values(const at::Tensor& t);
  // Returns the slot that storage(slot) reads after wait().
  size_t add_storage(const at::Tensor& t);
  // Queues every copy on the current stream, waits for it once, and copies the results out of
  // the staging buffer. A CUDA error throws std::runtime_error. Once per batch.
  void wait();
  at::Tensor values(size_t slot) const { return values_[slot]; }
  const std::string& storage(size_t slot) const { return storage_[slot]; }

 private:
  struct Item {
    at::Tensor source;  // on the device: contiguous values, or a byte view of the whole storage
    bool is_storage = false;
    size_t slot = 0;
  };
  std::vector<Item> items_;
  std::vector<at::Tensor> values_;
  std::vector<std::string> storage_;
};

}  // namespace gauntlet::worker
