// JSON pointers (RFC 6901) into a schema file, e.g. "/inputs/0/shapes": how the loader and lint
// name the field an issue is about (src/schema only).
#pragma once
#include <cstddef>
#include <string>

namespace gauntlet::schema_internal {

inline std::string escape_pointer_token(const std::string& t) {
  std::string r;
  for (char c : t) {
    if (c == '~') r += "~0";
    else if (c == '/') r += "~1";
    else r += c;
  }
  return r;
}

inline std::string at(const std::string& base, const std::string& key) {
  return base + "/" + escape_pointer_token(key);
}
inline std::string at(const std::string& base, size_t i) { return base + "/" + std::to_string(i); }

}  // namespace gauntlet::schema_internal
