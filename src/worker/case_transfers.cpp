// device=cuda: a case's host<->device copies in batches, each batch waited for once (case_transfers.h).
#include "case_transfers.h"

#include <c10/core/impl/VirtualGuardImpl.h>

#include <cstdlib>
#include <cstring>

#include "tensor_storage.h"

namespace gauntlet::worker {
namespace {

// Each tensor's bytes start on a 512-byte boundary of a staging buffer (whole DMA lines).
constexpr size_t kAlign = 512;

size_t aligned(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// GAUNTLET_PAGEABLE_STAGING=1 (a measurement knob, docs/gpu.md): pageable staging buffers, whose
// copies the runtime performs before returning, instead of page-locked ones, whose allocation and
// release are driver calls in every child's life (issue 18: what a child costs the driver).
bool pageable_staging() {
  static const bool pageable = [] {
    const char* v = std::getenv("GAUNTLET_PAGEABLE_STAGING");
    return v && std::strcmp(v, "1") == 0;
  }();
  return pageable;
}

// The two staging buffers (0: to the device, 1: to the host), page-locked, kept across cases and
// grown to a power of two at least `bytes`. Page-locked memory is what lets a copy be queued
// without the runtime waiting for it; its allocation is a driver call, so it is not redone per case.
at::Tensor& staging(int which, size_t bytes) {
  static at::Tensor buffers[2];
  at::Tensor& b = buffers[which];
  if (!b.defined() || size_t(b.numel()) < bytes) {
    size_t size = 1 << 20;
    while (size < bytes) size *= 2;
    b = at::Tensor();  // the old buffer goes back before the larger one is taken
    b = at::empty({int64_t(size)}, at::TensorOptions().dtype(at::kByte).pinned_memory(!pageable_staging()));
  }
  return b;
}

// Waits for the current CUDA stream, where the batch's copies were queued; a CUDA error throws.
void wait_for_current_stream() {
  c10::impl::VirtualGuardImpl guard(c10::DeviceType::CUDA);
  guard.getStream(guard.getDevice()).synchronize();
}

// The whole storage of `t` as a byte tensor on t's device.
at::Tensor storage_as_bytes(const at::Tensor& t) {
  at::Tensor bytes = at::empty({0}, t.options().dtype(at::kByte));
  bytes.set_(t.storage(), 0, {int64_t(t.storage().nbytes())}, {1});
  return bytes;
}

// A contiguous tensor's elements as a byte tensor (its own bytes only, not the whole storage).
at::Tensor elements_as_bytes(const at::Tensor& c) {
  at::Tensor bytes = at::empty({0}, c.options().dtype(at::kByte));
  bytes.set_(c.storage(), c.storage_offset() * int64_t(c.element_size()), {int64_t(c.numel()) * int64_t(c.element_size())},
             {1});
  return bytes;
}

}  // namespace

StagedInputs stage_inputs(const std::vector<at::Tensor>& cpu) {
  StagedInputs s;
  s.cpu = cpu;
  s.offset.assign(cpu.size(), 0);
  size_t total = 0;
  for (size_t i = 0; i < cpu.size(); ++i) {
    const at::Tensor& t = cpu[i];
    if (!t.defined() || !t.has_storage()) continue;
    s.offset[i] = total;
    total = aligned(total + t.storage().nbytes());
  }
  // The previous case's copies out of this buffer are complete before it is rewritten: a case
  // that ended in its kernel's exception was never waited for.
  c10::impl::VirtualGuardImpl guard(c10::DeviceType::CUDA);
  const c10::Stream stream = guard.getStream(guard.getDevice());
  if (!guard.queryStream(stream)) guard.synchronizeStream(stream);
  auto* base = static_cast<uint8_t*>(staging(0, total).data_ptr());
  for (size_t i = 0; i < cpu.size(); ++i) {
    const at::Tensor& t = cpu[i];
    if (t.defined() && t.has_storage() && t.storage().nbytes() > 0)
      std::memcpy(base + s.offset[i], t.storage().data(), t.storage().nbytes());
  }
  s.ready = true;
  return s;
}

std::vector<at::Tensor> to_cuda_same_layout_all(const StagedInputs& staged) {
  const std::vector<at::Tensor>& cpu = staged.cpu;
  std::vector<at::Tensor> out(cpu.size());
  at::Tensor& stage = staging(0, 0);
  for (size_t i = 0; i < cpu.size(); ++i) {
    const at::Tensor& t = cpu[i];
    if (!t.defined()) continue;
    if (!t.has_storage()) {
      out[i] = t.to(at::kCUDA);  // no case input takes this path today
      continue;
    }
    const size_t nbytes = t.storage().nbytes();
    // Taken from the caching allocator after the case's poisoning, like every device copy before.
    at::Tensor bytes = at::empty({int64_t(nbytes)}, at::TensorOptions().dtype(at::kByte).device(at::kCUDA));
    if (nbytes > 0) bytes.copy_(stage.narrow(0, int64_t(staged.offset[i]), int64_t(nbytes)), /*non_blocking=*/true);
    at::Tensor d = at::empty({0}, t.options().device(at::kCUDA));
    d.set_(bytes.storage(), t.storage_offset(), t.sizes(), t.strides());
    out[i] = d;
  }
  return out;
}

size_t HostBatch::add_values(const at::Tensor& t) {
  const size_t slot = values_.size();
  values_.emplace_back();
  if (!t.is_cuda() || !t.has_storage()) {
    values_[slot] = t.cpu().contiguous().clone();  // on the host already, or no storage to stage
    return slot;
  }
  // A strided or expanded output is made contiguous on the device first (queued on the stream).
  items_.push_back({t.resolve_conj().resolve_neg().contiguous(), false, slot});
  return slot;
}

size_t HostBatch::add_storage(const at::Tensor& t) {
  const size_t slot = storage_.size();
  storage_.emplace_back();
  if (!t.is_cuda() || !t.has_storage()) {
    storage_[slot] = storage_bytes(t);
    return slot;
  }
  items_.push_back({t, true, slot});
  return slot;
}

void HostBatch::wait() {
  std::vector<at::Tensor> sources(items_.size());
  std::vector<size_t> offset(items_.size(), 0);
  size_t total = 0;
  for (size_t i = 0; i < items_.size(); ++i) {
    sources[i] = items_[i].is_storage ? storage_as_bytes(items_[i].source) : elements_as_bytes(items_[i].source);
    offset[i] = total;
    total = aligned(total + size_t(sources[i].numel()));
  }
  at::Tensor& stage = staging(1, total);
  for (size_t i = 0; i < items_.size(); ++i)
    if (sources[i].numel() > 0)
      stage.narrow(0, int64_t(offset[i]), sources[i].numel()).copy_(sources[i], /*non_blocking=*/true);
  if (total > 0) wait_for_current_stream();
  const auto* base = static_cast<const uint8_t*>(stage.data_ptr());
  for (size_t i = 0; i < items_.size(); ++i) {
    const Item& it = items_[i];
    const size_t nbytes = size_t(sources[i].numel());
    if (it.is_storage) {
      storage_[it.slot].assign(reinterpret_cast<const char*>(base + offset[i]), nbytes);
    } else {
      at::Tensor host = at::empty(it.source.sizes(), at::TensorOptions().dtype(it.source.scalar_type()));
      if (nbytes > 0) std::memcpy(host.data_ptr(), base + offset[i], nbytes);
      values_[it.slot] = host;
    }
  }
  items_.clear();
}

}  // namespace gauntlet::worker
