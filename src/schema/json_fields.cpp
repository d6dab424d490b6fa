// Typed, strict access to the fields of a schema's JSON (JsonFields): the loader's structural checks
// (types, required and unknown keys with a "did you mean" hint), each recorded as a SchemaIssue.
#include <algorithm>
#include <cstdint>

#include "schema_reader.h"

namespace gauntlet::schema_internal {
namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

const char* json_type(const json& j) {
  if (j.is_null()) return "null";
  if (j.is_boolean()) return "a boolean";
  if (j.is_number_integer() || j.is_number_unsigned()) return "an integer";
  if (j.is_number()) return "a number";
  if (j.is_string()) return "a string";
  if (j.is_array()) return "an array";
  return "an object";
}

void JsonFields::issue(const std::string& field, const std::string& msg) {
  failed_ = true;
  if (issues_) issues_->push_back({file_, field, msg});
}

void JsonFields::check_keys(const json& o, const std::string& path, std::initializer_list<const char*> allowed) {
  for (auto it = o.begin(); it != o.end(); ++it) {
    const std::string& k = it.key();
    bool ok = false;
    for (const char* a : allowed) ok = ok || k == a;
    if (ok) continue;
    std::string best;
    size_t bestd = 3;
    for (const char* a : allowed) {
      size_t d = edit_distance(k, a);
      if (d < bestd) {
        bestd = d;
        best = a;
      }
    }
    issue(at(path, k), "unknown key \"" + k + "\"" + (best.empty() ? "" : " (did you mean \"" + best + "\"?)"));
  }
}

const json* JsonFields::field(const json& o, const char* key, const std::string& path, bool required) {
  auto it = o.find(key);
  if (it == o.end()) {
    if (required) issue(at(path, key), std::string("missing required field \"") + key + "\"");
    return nullptr;
  }
  return &*it;
}

bool JsonFields::want_object(const json& j, const std::string& path) {
  if (j.is_object()) return true;
  issue(path, std::string("expected an object, got ") + json_type(j));
  return false;
}

bool JsonFields::want_array(const json& j, const std::string& path) {
  if (j.is_array()) return true;
  issue(path, std::string("expected an array, got ") + json_type(j));
  return false;
}

std::string JsonFields::get_string(const json& o, const char* key, const std::string& path, bool required,
                                   std::string dflt) {
  const json* j = field(o, key, path, required);
  if (!j) return dflt;
  if (!j->is_string()) {
    issue(at(path, key), std::string("expected a string, got ") + json_type(*j));
    return dflt;
  }
  return j->get<std::string>();
}

std::string JsonFields::get_expr(const json& j, const std::string& path) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_number_integer() || j.is_number_unsigned()) return j.dump();
  issue(path, std::string("expected an expression (string or integer), got ") + json_type(j));
  return "";
}

std::string JsonFields::get_expr_field(const json& o, const char* key, const std::string& path, bool required,
                                       std::string dflt) {
  const json* j = field(o, key, path, required);
  if (!j) return dflt;
  return get_expr(*j, at(path, key));
}

std::optional<int64_t> JsonFields::get_int(const json& j, const std::string& path) {
  if (j.is_number_integer() || j.is_number_unsigned()) {
    if (j.is_number_unsigned() && j.get<uint64_t>() > uint64_t(INT64_MAX)) {
      issue(path, "integer too large");
      return std::nullopt;
    }
    return j.get<int64_t>();
  }
  issue(path, std::string("expected an integer, got ") + json_type(j));
  return std::nullopt;
}

std::optional<double> JsonFields::get_number(const json& j, const std::string& path) {
  if (j.is_number()) return j.get<double>();
  issue(path, std::string("expected a number, got ") + json_type(j));
  return std::nullopt;
}

bool JsonFields::get_bool(const json& o, const char* key, const std::string& path, bool dflt) {
  const json* j = field(o, key, path, false);
  if (!j) return dflt;
  if (!j->is_boolean()) {
    issue(at(path, key), std::string("expected a boolean, got ") + json_type(*j));
    return dflt;
  }
  return j->get<bool>();
}

std::vector<std::string> JsonFields::get_string_list(const json& o, const char* key, const std::string& path,
                                                     bool required, bool exprs) {
  std::vector<std::string> r;
  const json* j = field(o, key, path, required);
  if (!j) return r;
  std::string p = at(path, key);
  if (!want_array(*j, p)) return r;
  for (size_t i = 0; i < j->size(); ++i) {
    const json& e = (*j)[i];
    if (exprs) {
      r.push_back(get_expr(e, at(p, i)));
    } else if (e.is_string()) {
      r.push_back(e.get<std::string>());
    } else {
      issue(at(p, i), std::string("expected a string, got ") + json_type(e));
    }
  }
  return r;
}

std::optional<DType> JsonFields::get_dtype(const json& j, const std::string& path) {
  if (!j.is_string()) {
    issue(path, std::string("expected a dtype name, got ") + json_type(j));
    return std::nullopt;
  }
  auto d = dtype_from_name(j.get<std::string>());
  if (!d) issue(path, "unknown dtype \"" + j.get<std::string>() + "\"");
  return d;
}

std::vector<std::string> JsonFields::get_notes(const json& o, const std::string& path) {
  return {get_string(o, "notes", path, false)};
}

}  // namespace gauntlet::schema_internal
