// The KernelBench problem -> op schema map (kernelbench/level1.json): loading it, every field checked,
// with one-line errors that name the file and the field.
#include "gauntlet/kernelbench/kernelbench.h"
#include "gauntlet/schema/json_file.h"

#include <cstdlib>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#ifndef GAUNTLET_SOURCE_DIR
#define GAUNTLET_SOURCE_DIR "."
#endif

namespace gauntlet::kernelbench {
namespace {

// One map being read: its JSON, the ProblemMap filled so far, and where the first bad field is
// reported (it ends the read). Each step returns false after reporting one.
struct ProblemMapReader {
  const std::string& path;
  nlohmann::json& j;
  std::string* error;
  ProblemMap map;
  std::set<int> ids;  // of the mapped problems: each listed once, none also a near miss

  bool bad(const std::string& field, const std::string& msg) {
    *error = path + ": field '" + field + "': " + msg;
    return false;
  }

  // The top level: known fields, the format and version, the level.
  bool read_header() {
    if (!j.is_object()) return bad("/", "the map is a JSON object");
    static const std::set<std::string> top = {"format", "version", "level", "about", "problems", "near_misses"};
    for (auto it = j.begin(); it != j.end(); ++it)
      if (!top.count(it.key())) return bad(it.key(), "unknown field");
    if (!j.contains("format") || j["format"] != "gauntlet-kernelbench-map")
      return bad("format", "must be \"gauntlet-kernelbench-map\"");
    if (!j.contains("version") || j["version"] != 1) return bad("version", "must be 1");
    map.path = path;
    if (!j.contains("level") || !j["level"].is_number_integer() || j["level"].get<int>() <= 0)
      return bad("level", "required positive integer");
    map.level = j["level"];
    return true;
  }

  bool read_problems() {
    if (!j.contains("problems") || !j["problems"].is_array()) return bad("problems", "required list");
    static const std::set<std::string> pfields = {"id", "name", "op", "attrs", "inputs", "input_ranks", "shapes", "equal_dims", "dtypes", "notes"};
    for (size_t i = 0; i < j["problems"].size(); ++i) {
      const auto& p = j["problems"][i];
      std::string at = "problems/" + std::to_string(i);
      if (!p.is_object()) return bad(at, "must be an object");
      for (auto it = p.begin(); it != p.end(); ++it)
        if (!pfields.count(it.key())) return bad(at + "/" + it.key(), "unknown field");
      ProblemMapping m;
      if (!read_problem_identity(p, at, &m) || !read_problem_inputs(p, at, &m) || !read_problem_contract(p, at, &m))
        return false;
      map.problems.push_back(std::move(m));
    }
    return true;
  }

  // id (unique), name ("<id>_<title>") and the op schema it maps to.
  bool read_problem_identity(const nlohmann::json& p, const std::string& at, ProblemMapping* m) {
    if (!p.contains("id") || !p["id"].is_number_integer() || p["id"].get<int64_t>() <= 0 || p["id"].get<int64_t>() > 1000000)
      return bad(at + "/id", "required positive integer");
    m->id = p["id"];
    if (!ids.insert(m->id).second) return bad(at + "/id", "problem " + std::to_string(m->id) + " is listed twice");
    if (!p.contains("name") || !p["name"].is_string()) return bad(at + "/name", "required string");
    m->name = p["name"];
    std::string prefix = std::to_string(m->id) + "_";
    if (m->name.rfind(prefix, 0) != 0 || m->name.size() == prefix.size())
      return bad(at + "/name", "must be \"" + prefix + "<title>\", got \"" + m->name + "\"");
    if (!p.contains("op") || !p["op"].is_string() || p["op"].get<std::string>().empty()) return bad(at + "/op", "required string (a schema name)");
    m->op = p["op"];
    return true;
  }

  // The attributes the reference fixes and the get_inputs() tensors: their schema inputs and ranks.
  bool read_problem_inputs(const nlohmann::json& p, const std::string& at, ProblemMapping* m) {
    if (p.contains("attrs")) {
      if (!p["attrs"].is_object()) return bad(at + "/attrs", "must be an object of name: value");
      for (auto it = p["attrs"].begin(); it != p["attrs"].end(); ++it) {
        AttrValue v;
        if (!json_to_attr(it.value(), &v)) return bad(at + "/attrs/" + it.key(), "must be a number or a bool");
        m->attrs[it.key()] = v;
      }
    }
    if (!p.contains("inputs") || !p["inputs"].is_array() || p["inputs"].empty())
      return bad(at + "/inputs", "required non-empty list of schema input names (get_inputs order)");
    for (const auto& n : p["inputs"]) {
      if (!n.is_string() || n.get<std::string>().empty()) return bad(at + "/inputs", "entries must be input names");
      m->inputs.push_back(n);
    }
    if (p.contains("input_ranks")) {
      if (!p["input_ranks"].is_array() || p["input_ranks"].size() != m->inputs.size())
        return bad(at + "/input_ranks", "must be a list with one rank per input");
      for (const auto& r : p["input_ranks"]) {
        if (!r.is_number_integer() || r.get<int>() < 0 || r.get<int>() > 8) return bad(at + "/input_ranks", "ranks are integers 0..8");
        m->input_ranks.push_back(r);
      }
    }
    return true;
  }

  // The problem's narrower contract: dim limits, equal dims, dtypes; and its notes.
  bool read_problem_contract(const nlohmann::json& p, const std::string& at, ProblemMapping* m) {
    if (p.contains("shapes")) {
      if (!p["shapes"].is_object()) return bad(at + "/shapes", "must be an object of dim: {min, max}");
      for (auto it = p["shapes"].begin(); it != p["shapes"].end(); ++it) {
        if (!it.value().is_object()) return bad(at + "/shapes/" + it.key(), "must be an object with min and/or max");
        DimLimit lim;
        for (auto f = it.value().begin(); f != it.value().end(); ++f) {
          if (f.key() != "min" && f.key() != "max") return bad(at + "/shapes/" + it.key() + "/" + f.key(), "unknown field");
          if (!f.value().is_number_integer() || f.value().get<int64_t>() < 0)
            return bad(at + "/shapes/" + it.key() + "/" + f.key(), "must be a non-negative integer");
          (f.key() == "min" ? lim.min : lim.max) = f.value().get<int64_t>();
        }
        if (lim.min && lim.max && *lim.min > *lim.max) return bad(at + "/shapes/" + it.key(), "min exceeds max");
        m->shapes[it.key()] = lim;
      }
    }
    if (p.contains("equal_dims")) {
      if (!p["equal_dims"].is_array()) return bad(at + "/equal_dims", "must be a list of dim groups, e.g. [[\"M\", \"K\", \"N\"]]");
      for (const auto& g : p["equal_dims"]) {
        std::vector<std::string> group;
        if (g.is_array())
          for (const auto& d : g)
            if (d.is_string() && !d.get<std::string>().empty()) group.push_back(d.get<std::string>());
        if (!g.is_array() || group.size() != g.size() || group.size() < 2)
          return bad(at + "/equal_dims", "each group is a list of at least two dim names");
        m->equal_dims.push_back(group);
      }
    }
    if (p.contains("dtypes")) {
      if (!p["dtypes"].is_array() || p["dtypes"].empty()) return bad(at + "/dtypes", "must be a non-empty list of dtype names");
      for (const auto& d : p["dtypes"]) {
        auto dt = d.is_string() ? dtype_from_name(d.get<std::string>()) : std::nullopt;
        if (!dt) return bad(at + "/dtypes", "unknown dtype " + d.dump());
        m->dtypes.push_back(*dt);
      }
    }
    if (p.contains("notes")) {
      if (!p["notes"].is_string()) return bad(at + "/notes", "must be a string");
      m->notes = p["notes"];
    }
    return true;
  }

  bool read_near_misses() {
    if (j.contains("near_misses")) {
      if (!j["near_misses"].is_array()) return bad("near_misses", "must be a list");
      for (size_t i = 0; i < j["near_misses"].size(); ++i) {
        const auto& p = j["near_misses"][i];
        std::string at = "near_misses/" + std::to_string(i);
        if (!p.is_object()) return bad(at, "must be an object");
        for (auto it = p.begin(); it != p.end(); ++it)
          if (it.key() != "id" && it.key() != "name" && it.key() != "closest_op" && it.key() != "reason")
            return bad(at + "/" + it.key(), "unknown field");
        NearMiss n;
        if (!p.contains("id") || !p["id"].is_number_integer() || p["id"].get<int64_t>() <= 0 || p["id"].get<int64_t>() > 1000000)
          return bad(at + "/id", "required positive integer");
        n.id = p["id"];
        if (ids.count(n.id)) return bad(at + "/id", "problem " + std::to_string(n.id) + " is both mapped and a near miss");
        if (!p.contains("name") || !p["name"].is_string()) return bad(at + "/name", "required string");
        n.name = p["name"];
        if (p.contains("closest_op") && !p["closest_op"].is_null()) {
          if (!p["closest_op"].is_string()) return bad(at + "/closest_op", "must be a schema name or null");
          n.closest_op = p["closest_op"];
        }
        if (!p.contains("reason") || !p["reason"].is_string() || p["reason"].get<std::string>().empty())
          return bad(at + "/reason", "required string: why the problem does not map");
        n.reason = p["reason"];
        map.near_misses.push_back(std::move(n));
      }
    }
    return true;
  }
};

}  // namespace

std::optional<ProblemMap> load_problem_map(const std::string& path, std::string* error) {
  std::optional<nlohmann::json> j = read_json_file(path, "KernelBench map", error);
  if (!j) return std::nullopt;
  ProblemMapReader r{path, *j, error, {}, {}};
  if (!r.read_header() || !r.read_problems() || !r.read_near_misses()) return std::nullopt;
  return std::move(r.map);
}

std::string default_problem_map_path() {
  if (const char* env = std::getenv("GAUNTLET_KERNELBENCH_MAP"); env && *env) return env;
  return std::string(GAUNTLET_SOURCE_DIR) + "/kernelbench/level1.json";
}

}  // namespace gauntlet::kernelbench
