// A tensor's whole storage across host and device (tensor_storage.h).
#include "tensor_storage.h"

#include <cstring>

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
  return std::string(static_cast<const char*>(t.storage().data()), t.storage().nbytes());
}

bool same_storage_bytes(const at::Tensor& t, const std::string& bytes) {
  if (!t.has_storage() || t.storage().nbytes() == 0) return bytes.empty();
  return t.storage().nbytes() == bytes.size() && std::memcmp(t.storage().data(), bytes.data(), bytes.size()) == 0;
}

}  // namespace gauntlet::worker
