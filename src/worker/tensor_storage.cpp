// A tensor's whole storage across host and device (tensor_storage.h).
#include "tensor_storage.h"

namespace gauntlet::worker {

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

}  // namespace gauntlet::worker
