// A tensor's whole storage across host and device (tensor_storage.h).
#include "tensor_storage.h"

#include <cstring>

namespace gauntlet::worker {

at::Tensor to_cuda_same_layout(const at::Tensor& cpu) {
  if (!cpu.has_storage()) return cpu.to(at::kCUDA);
  const size_t nbytes = cpu.storage().nbytes();
  at::Tensor bytes = at::empty({int64_t(nbytes)}, at::TensorOptions().dtype(at::kByte).device(at::kCUDA));
  if (nbytes > 0) {
    at::Tensor host = at::from_blob(const_cast<void*>(cpu.storage().data()), {int64_t(nbytes)},
                                    at::TensorOptions().dtype(at::kByte));
    bytes.copy_(host);
  }
  at::Tensor t = at::empty({0}, cpu.options().device(at::kCUDA));
  t.set_(bytes.storage(), cpu.storage_offset(), cpu.sizes(), cpu.strides());
  return t;
}

bool overlaps(const at::Tensor& a, const at::Tensor& b) {
  if (!a.defined() || !b.defined() || !a.has_storage() || !b.has_storage()) return false;
  auto pa = static_cast<const char*>(a.storage().data());
  auto pb = static_cast<const char*>(b.storage().data());
  size_t na = a.storage().nbytes(), nb = b.storage().nbytes();
  if (!pa || !pb || na == 0 || nb == 0) return false;
  return pa < pb + nb && pb < pa + na;
}

std::string storage_bytes(const at::Tensor& t) {
  if (!t.has_storage() || t.storage().nbytes() == 0) return {};
  if (t.is_cuda()) {
    at::Tensor dev = at::empty({0}, t.options().dtype(at::kByte));
    dev.set_(t.storage(), 0, {int64_t(t.storage().nbytes())}, {1});
    at::Tensor host = dev.cpu();
    return std::string(static_cast<const char*>(host.data_ptr()), host.numel());
  }
  return std::string(static_cast<const char*>(t.storage().data()), t.storage().nbytes());
}

at::Tensor host_mirror(const at::Tensor& t) {
  std::string b = storage_bytes(t);
  at::Tensor m = at::empty({int64_t(b.size())}, at::TensorOptions().dtype(at::kByte));
  if (!b.empty()) std::memcpy(m.data_ptr(), b.data(), b.size());
  at::Tensor v = at::empty({0}, t.options().device(at::kCPU));
  v.set_(m.storage(), t.storage_offset(), t.sizes(), t.strides());
  return v;
}

}  // namespace gauntlet::worker
