// Op schema loading: opschemas/<op>.json -> OpSchema. The loader is strict about structure
// (JSON syntax, field types, unknown keys, required keys, dtype names); every problem becomes a
// SchemaIssue naming the file and the field as a JSON pointer. The document's sections are read in
// schema_reader.cpp (on json_fields.cpp); semantic checks live in schema_lint.cpp. The format is
// documented in docs/schema-format.md.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "gauntlet/schema/schema.h"
#include "schema_reader.h"

#ifndef GAUNTLET_SOURCE_DIR
#define GAUNTLET_SOURCE_DIR "."
#endif

namespace gauntlet {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

}  // namespace

const InputSpec* OpSchema::input(const std::string& n) const {
  for (const auto& i : inputs)
    if (i.name == n) return &i;
  return nullptr;
}

const AttrSpec* OpSchema::attribute(const std::string& n) const {
  for (const auto& a : attributes)
    if (a.name == n) return &a;
  return nullptr;
}

std::string OpSchema::broken_attr_constraint(const std::map<std::string, double>& values, std::string* why) const {
  for (const std::string& c : attr_constraints) {
    std::string error;
    auto r = eval_double_expr(c, values, &error);
    if (r && *r != 0) continue;
    if (why) *why = r ? "" : error;
    return c;
  }
  return "";
}

bool is_integer_value_kind(const std::string& kind) {
  return kind == "index" || kind == "integer" || kind == "key" || kind == "bool" || kind == "offsets";
}

bool is_tie_spread_name(const std::string& s) {
  return s == "uniform" || s == "zipf" || s == "all_equal" || s == "sorted_runs" || s == "reverse_runs";
}

const InputSpec* OpSchema::case_dtype_input() const {
  // Follow same_dtype_as (bounded, in case of a cycle that lint reports).
  auto resolved = [&](const InputSpec* in) {
    for (int hop = 0; hop < 16 && in && in->dtypes.empty() && !in->same_dtype_as.empty(); ++hop)
      in = input(in->same_dtype_as);
    return in;
  };
  for (const InputSpec& candidate : inputs) {
    const InputSpec* in = resolved(&candidate);
    if (in && std::any_of(in->dtypes.begin(), in->dtypes.end(), dtype_is_floating)) return in;
  }
  return inputs.empty() ? nullptr : resolved(&inputs[0]);
}

std::vector<DType> OpSchema::case_dtypes() const {
  const InputSpec* in = case_dtype_input();
  if (!in) return {};
  std::vector<DType> r;
  for (DType d : in->dtypes)
    if (dtype_is_floating(d)) r.push_back(d);
  return r.empty() ? in->dtypes : r;
}

std::optional<OpSchema> load_schema_file(const std::string& path, std::vector<SchemaIssue>* issues) {
  auto add = [&](const std::string& field, const std::string& msg) {
    if (issues) issues->push_back({path, field, msg});
  };
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    add("", "cannot open file");
    return std::nullopt;
  }
  std::stringstream buf;
  buf << f.rdbuf();
  std::string text = buf.str();
  json root;
  try {
    root = json::parse(text);
  } catch (const json::parse_error& e) {
    // Turn the byte offset into line:column.
    size_t off = std::min<size_t>(e.byte == 0 ? 0 : e.byte - 1, text.size());
    size_t line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(off), '\n');
    size_t nl = text.rfind('\n', off == 0 ? 0 : off - 1);
    size_t col = (nl == std::string::npos || off == 0) ? off + 1 : off - nl;
    add("", "invalid JSON at line " + std::to_string(line) + ", column " + std::to_string(col) + ": " + e.what());
    return std::nullopt;
  }
  auto s = schema_internal::read_schema(root, path, issues);
  if (s) {
    std::string stem = fs::path(path).stem().string();
    if (s->name != stem) {
      add("/name", "name \"" + s->name + "\" differs from the file name \"" + stem + ".json\"");
      return std::nullopt;
    }
  }
  return s;
}

std::vector<OpSchema> load_schema_dir(const std::string& dir, std::vector<SchemaIssue>* issues) {
  std::vector<std::string> files;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file() && it->path().extension() == ".json") files.push_back(it->path().string());
  if (ec && issues) issues->push_back({dir, "", "cannot read schema directory: " + ec.message()});
  std::sort(files.begin(), files.end());
  std::vector<OpSchema> out;
  std::set<std::string> seen;
  for (const auto& f : files) {
    auto s = load_schema_file(f, issues);
    if (!s) continue;
    if (!seen.insert(s->name).second) {
      if (issues) issues->push_back({f, "/name", "duplicate op name \"" + s->name + "\""});
      continue;
    }
    out.push_back(std::move(*s));
  }
  return out;
}

std::vector<SchemaIssue> lint_schema_file(const std::string& path, const std::vector<std::string>& known_oracles) {
  std::vector<SchemaIssue> issues;
  auto s = load_schema_file(path, &issues);
  if (s) {
    auto more = lint_schema(*s, known_oracles);
    issues.insert(issues.end(), more.begin(), more.end());
  }
  return issues;
}

bool is_structure_name(const std::string& s) {
  return s == "lower-triangular" || s == "upper-triangular" || s == "symmetric" || s == "diagonal";
}

std::string default_schema_dir() {
  if (const char* env = std::getenv("GAUNTLET_SCHEMAS"); env && *env) return env;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path cand = exe.parent_path().parent_path() / "opschemas";
    if (fs::is_directory(cand, ec)) return cand.string();
  }
  return std::string(GAUNTLET_SOURCE_DIR) + "/opschemas";
}

}  // namespace gauntlet
