// Content digests (include/gauntlet/common/digest.h): OpenSSL's sha256 over bytes, files and tensors.
#include "gauntlet/common/digest.h"

#include <openssl/evp.h>

#include <fstream>
#include <sstream>

namespace gauntlet {

std::string sha256_hex(const std::string& bytes) { return sha256_hex_pieces({{bytes.data(), bytes.size()}}); }

std::string sha256_hex_pieces(const std::vector<std::pair<const void*, size_t>>& pieces) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  if (!ctx) return "";
  bool ok = EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) == 1;
  for (const auto& [data, size] : pieces) ok = ok && EVP_DigestUpdate(ctx, data, size) == 1;
  ok = ok && EVP_DigestFinal_ex(ctx, digest, &len) == 1;
  EVP_MD_CTX_free(ctx);
  if (!ok) return "";
  static const char* hex = "0123456789abcdef";
  std::string out;
  out.reserve(2 * len);
  for (unsigned int i = 0; i < len; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 15];
  }
  return out;
}

std::string sha256_file_hex(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) return "";
  return sha256_hex(bytes.str());
}

std::string inputs_digest(const std::vector<at::Tensor>& tensors) {
  // Per tensor "dtype[d0,d1,]" then its bytes, hashed as one string (replay files keep this digest).
  std::vector<at::Tensor> kept;
  std::vector<std::string> heads;
  kept.reserve(tensors.size());
  heads.reserve(tensors.size());
  std::vector<std::pair<const void*, size_t>> pieces;
  for (const at::Tensor& t0 : tensors) {
    const at::Tensor& t = kept.emplace_back(t0.contiguous());
    std::string& head = heads.emplace_back(std::string(c10::toString(t.scalar_type())) + "[");
    for (int64_t s : t.sizes()) head += std::to_string(s) + ",";
    head += "]";
  }
  for (size_t i = 0; i < kept.size(); ++i) {
    pieces.emplace_back(heads[i].data(), heads[i].size());
    pieces.emplace_back(kept[i].data_ptr(), size_t(kept[i].numel()) * size_t(kept[i].element_size()));
  }
  return sha256_hex_pieces(pieces);
}

}  // namespace gauntlet
