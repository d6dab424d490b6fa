// Reading user-written JSON files with one-line errors, and attribute values from JSON.
#include "gauntlet/schema/json_file.h"

#include <fstream>

namespace gauntlet {

std::optional<nlohmann::json> read_json_file(const std::string& path, const std::string& what, std::string* error) {
  std::ifstream in(path);
  if (!in) return (*error = "cannot read " + what + " " + path + ": no such file or unreadable", std::nullopt);
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    const std::string why = e.what();  // "[json.exception.parse_error.101] parse error at ..."
    const size_t b = why.find(']');
    return (*error = path + ": malformed JSON: " + (b == std::string::npos ? why : why.substr(b + 2)), std::nullopt);
  }
}

bool json_to_attr(const nlohmann::json& v, AttrValue* out) {
  if (v.is_boolean()) *out = v.get<bool>();
  else if (v.is_number_integer()) *out = v.get<int64_t>();
  else if (v.is_number()) *out = v.get<double>();
  else return false;
  return true;
}

}  // namespace gauntlet
