// Reading the JSON files a user writes (manifests, the KernelBench map): one-line errors, attributes.
#pragma once
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "gauntlet/common/types.h"

namespace gauntlet {

// The file at `path` parsed as JSON. nullopt with *error when it cannot be read ("cannot read
// <what> <path>: no such file or unreadable") or is not JSON ("<path>: malformed JSON: <why>").
std::optional<nlohmann::json> read_json_file(const std::string& path, const std::string& what, std::string* error);

// A JSON number or bool as an attribute value; false for any other kind.
bool json_to_attr(const nlohmann::json& v, AttrValue* out);

}  // namespace gauntlet
