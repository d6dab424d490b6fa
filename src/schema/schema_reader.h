// Reading a schema's JSON into an OpSchema: the typed field access every section uses (JsonFields,
// json_fields.cpp) and the sections themselves (read_schema, schema_reader.cpp). src/schema only.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gauntlet/schema/schema.h"
#include "json_pointer.h"

namespace gauntlet::schema_internal {

using json = nlohmann::json;

// What a JSON value is, for messages: "null", "a boolean", "an integer", "a string", ...
const char* json_type(const json& j);

// Strict access to the fields of one schema document: every missing, unknown or mistyped field
// is recorded as a SchemaIssue naming the file and the field, and marks the document failed.
class JsonFields {
 public:
  JsonFields(std::string file, std::vector<SchemaIssue>* issues) : file_(std::move(file)), issues_(issues) {}
  bool failed() const { return failed_; }

  void issue(const std::string& field, const std::string& msg);

  // Reports keys of `o` not in `allowed`, with a "did you mean" hint for near misses.
  void check_keys(const json& o, const std::string& path, std::initializer_list<const char*> allowed);

  const json* field(const json& o, const char* key, const std::string& path, bool required);
  bool want_object(const json& j, const std::string& path);
  bool want_array(const json& j, const std::string& path);

  std::string get_string(const json& o, const char* key, const std::string& path, bool required,
                         std::string dflt = "");
  // A JSON string or integer holding an expression (integers are written back as text).
  std::string get_expr(const json& j, const std::string& path);
  std::string get_expr_field(const json& o, const char* key, const std::string& path, bool required,
                             std::string dflt = "");
  std::optional<int64_t> get_int(const json& j, const std::string& path);
  std::optional<double> get_number(const json& j, const std::string& path);
  bool get_bool(const json& o, const char* key, const std::string& path, bool dflt);
  std::vector<std::string> get_string_list(const json& o, const char* key, const std::string& path,
                                           bool required, bool exprs = false);
  std::optional<DType> get_dtype(const json& j, const std::string& path);
  std::vector<std::string> get_notes(const json& o, const std::string& path);

 protected:
  std::string file_;
  std::vector<SchemaIssue>* issues_;
  bool failed_ = false;
};

// Reads one schema document, recording every structural issue; nullopt when there was any.
std::optional<OpSchema> read_schema(const json& root, const std::string& file, std::vector<SchemaIssue>* issues);

}  // namespace gauntlet::schema_internal
