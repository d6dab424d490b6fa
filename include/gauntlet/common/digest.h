// Content digests: sha256 of bytes, of files and of tensors (kernel hashes, cache keys, replay files).
#pragma once
#include <ATen/ATen.h>

#include <string>
#include <utility>
#include <vector>

namespace gauntlet {

// sha256 of a byte string / a file, lowercase hex. file: empty string if unreadable.
std::string sha256_hex(const std::string& bytes);
// The sha256 of the pieces' concatenation, without making it (inputs of gigabytes).
std::string sha256_hex_pieces(const std::vector<std::pair<const void*, size_t>>& pieces);
std::string sha256_file_hex(const std::string& path);
// sha256 over dtype, shape and bytes of each tensor: the replay file's input digest.
std::string inputs_digest(const std::vector<at::Tensor>& tensors);

}  // namespace gauntlet
