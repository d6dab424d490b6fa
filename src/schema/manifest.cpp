// Loading kernel manifests: every field checked, one-line errors that name the file and field.
#include "gauntlet/schema/manifest.h"

#include "gauntlet/schema/json_file.h"
#include "gauntlet/schema/schema.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cctype>
#include <fstream>
#include <set>
#include <sstream>

namespace gauntlet {
namespace {

std::string dir_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// Reads the manifest file as JSON; nullopt with *error when it is not there or not JSON.
std::optional<nlohmann::json> read_manifest_json(const std::string& path, std::string* error) {
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return (*error = "cannot read manifest " + path + ": a directory, not a kernel.json", std::nullopt);
  return read_json_file(path, "manifest", error);
}

// One manifest being read: its JSON, the KernelManifest filled so far, and where the first bad field
// is reported (it ends the read). Each step returns false after reporting one.
struct ManifestReader {
  const std::string& path;
  nlohmann::json& j;
  std::string* error;
  KernelManifest m;

  bool bad(const std::string& field, const std::string& msg) {
    *error = path + ": field '" + field + "': " + msg;
    return false;
  }

  // The whole object: its fields known, no path cut short.
  bool check_fields() {
    if (!j.is_object()) return bad("/", "a manifest is a JSON object");
    // A NUL inside a path would cut it short where the file system reads it.
    for (const char* f : {"op", "source", "entry", "backward", "reference"})
      if (j.contains(f) && j[f].is_string() && j[f].get<std::string>().find('\0') != std::string::npos)
        return bad(f, "contains a NUL byte");
    static const std::set<std::string> known = {"op", "source", "entry", "backward", "device", "dtypes",
                                                "attrs", "shapes", "ranks", "layouts", "equal_dims", "structure",
                                                "expect", "notes", "reference"};
    for (auto it = j.begin(); it != j.end(); ++it)
      if (!known.count(it.key())) return bad(it.key(), "unknown field");
    return true;
  }

  // What to load and where: op, source, entry points, device.
  bool read_kernel() {
    if (!j.contains("op") || !j["op"].is_string()) return bad("op", "required string");
    m.op = j["op"];
    if (!j.contains("source") || !j["source"].is_string()) return bad("source", "required string");
    std::string src = j["source"];
    m.source = (!src.empty() && src[0] == '/') ? src : dir_of(path) + "/" + src;
    if (j.contains("entry")) {
      if (!j["entry"].is_string() || j["entry"].get<std::string>().empty()) return bad("entry", "must be a non-empty string");
      m.entry = j["entry"];
      if (!is_entry_name(m.entry)) return bad("entry", "'" + m.entry + "' " + kEntryNameRule);
    }
    if (j.contains("backward")) {
      if (!j["backward"].is_string()) return bad("backward", "must be a string");
      m.backward_entry = j["backward"];
      if (!m.backward_entry.empty() && !is_entry_name(m.backward_entry))
        return bad("backward", "'" + m.backward_entry + "' " + kEntryNameRule);
    }
    if (j.contains("device")) {
      if (!j["device"].is_string()) return bad("device", "must be \"cpu\" or \"cuda\"");
      m.device = j["device"];
      if (m.device != "cpu" && m.device != "cuda") return bad("device", "must be \"cpu\" or \"cuda\", got \"" + m.device + "\"");
    }
    return true;
  }

  bool read_dtypes_and_attrs() {
    if (j.contains("dtypes")) {
      if (!j["dtypes"].is_array() || j["dtypes"].empty()) return bad("dtypes", "must be a non-empty list of dtype names");
      for (const auto& d : j["dtypes"]) {
        auto dt = d.is_string() ? dtype_from_name(d.get<std::string>()) : std::nullopt;
        if (!dt) return bad("dtypes", "unknown dtype " + d.dump());
        m.dtypes.push_back(*dt);
      }
    }
    if (j.contains("attrs")) {
      if (!j["attrs"].is_object()) return bad("attrs", "must be an object of name: value");
      for (auto it = j["attrs"].begin(); it != j["attrs"].end(); ++it) {
        AttrValue v;
        if (!json_to_attr(it.value(), &v)) return bad("attrs/" + it.key(), "must be a number or a bool");
        m.attrs[it.key()] = v;
      }
    }
    return true;
  }

  bool read_shapes_and_ranks() {
    if (j.contains("shapes") && j["shapes"] == "get_inputs") {
      // A KernelBench-style module's problem contract: the exact shapes and dtype of its get_inputs().
      if (!is_python_module(m)) return bad("shapes", "\"get_inputs\" (the problem's own shapes) needs a Python module with get_inputs()");
      m.shapes_from_get_inputs = true;
    } else if (j.contains("shapes")) {
      if (!j["shapes"].is_object())
        return bad("shapes", "must be an object of dim: {min, max}, or \"get_inputs\" (a module's problem shapes)");
      for (auto it = j["shapes"].begin(); it != j["shapes"].end(); ++it) {
        const auto& v = it.value();
        if (!v.is_object()) return bad("shapes/" + it.key(), "must be an object with min and/or max");
        DimLimit lim;
        for (auto f = v.begin(); f != v.end(); ++f) {
          if (f.key() != "min" && f.key() != "max") return bad("shapes/" + it.key() + "/" + f.key(), "unknown field");
          if (!f.value().is_number_integer() || f.value().get<int64_t>() < 0)
            return bad("shapes/" + it.key() + "/" + f.key(), "must be a non-negative integer");
          (f.key() == "min" ? lim.min : lim.max) = f.value().get<int64_t>();
        }
        m.shapes[it.key()] = lim;
      }
    }
    if (j.contains("ranks")) {
      if (!j["ranks"].is_object()) return bad("ranks", "must be an object of input: rank or [ranks]");
      for (auto it = j["ranks"].begin(); it != j["ranks"].end(); ++it) {
        const nlohmann::json list = it.value().is_array() ? it.value() : nlohmann::json::array({it.value()});
        std::vector<int64_t> ranks;
        for (const auto& r : list) {
          if (!r.is_number_integer() || r.get<int64_t>() < 0 || r.get<int64_t>() > 8)
            return bad("ranks/" + it.key(), "ranks are integers 0..8, got " + r.dump());
          ranks.push_back(r.get<int64_t>());
        }
        if (ranks.empty()) return bad("ranks/" + it.key(), "must name at least one rank");
        m.ranks[it.key()] = ranks;
      }
    }
    return true;
  }

  bool read_layouts_and_structure() {
    if (j.contains("layouts")) {
      if (!j["layouts"].is_array() || j["layouts"].empty()) return bad("layouts", "must be a non-empty list of layout names");
      for (const auto& l : j["layouts"]) {
        if (!l.is_string() || !is_layout_name(l.get<std::string>()))
          return bad("layouts", "unknown layout " + l.dump() + " (" + kLayoutNames + ")");
        m.layouts.push_back(l.get<std::string>());
      }
    }
    if (j.contains("equal_dims")) {
      const auto& e = j["equal_dims"];
      // One group may be written flat: ["M", "K", "N"].
      const nlohmann::json groups = e.is_array() && !e.empty() && e[0].is_string() ? nlohmann::json::array({e}) : e;
      if (!groups.is_array() || groups.empty()) return bad("equal_dims", "must be a list of dim groups, e.g. [[\"M\", \"K\", \"N\"]]");
      for (const auto& g : groups) {
        std::vector<std::string> group;
        if (g.is_array())
          for (const auto& d : g)
            if (d.is_string() && !d.get<std::string>().empty()) group.push_back(d.get<std::string>());
        if (!g.is_array() || group.size() != g.size() || group.size() < 2)
          return bad("equal_dims", "each group is a list of at least two dim names, got " + g.dump());
        m.equal_dims.push_back(group);
      }
    }
    if (j.contains("structure")) {
      if (!j["structure"].is_object()) return bad("structure", "must be an object of input: structure name");
      for (auto it = j["structure"].begin(); it != j["structure"].end(); ++it) {
        if (!it.value().is_string() || !is_structure_name(it.value().get<std::string>()))
          return bad("structure/" + it.key(), "unknown structure " + it.value().dump() + " (" + kStructureNames + ")");
        m.structures[it.key()] = it.value().get<std::string>();
      }
    }
    return true;
  }

  bool read_reference() {
    if (j.contains("reference")) {
      if (!j["reference"].is_string() || j["reference"].get<std::string>().empty())
        return bad("reference", "must be the path of the reference module (.py)");
      if (!is_python_module(m)) return bad("reference", "only a Python module (a .py source) takes a reference module");
      const std::string ref = j["reference"];
      m.reference = ref[0] == '/' ? ref : dir_of(path) + "/" + ref;
    }
    return true;
  }
};

}  // namespace

bool is_entry_name(const std::string& name) {
  // Identifiers, joined by "::" (a C++ function in a namespace) or "." (a Python attribute path).
  if (name.empty()) return false;
  bool start = true;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (start) {
      if (!(std::isalpha(static_cast<unsigned char>(c)) || c == '_')) return false;
      start = false;
    } else if (c == '.' || (c == ':' && i + 1 < name.size() && name[i + 1] == ':')) {
      i += c == ':';
      start = true;
    } else if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) {
      return false;
    }
  }
  return !start;
}

nlohmann::json manifest_dtypes_json(const KernelManifest& m) {
  nlohmann::json dtypes = nlohmann::json::array();
  for (DType d : m.dtypes) dtypes.push_back(dtype_name(d));
  return dtypes;
}

nlohmann::json manifest_shapes_json(const KernelManifest& m) {
  nlohmann::json shapes = nlohmann::json::object();
  for (const auto& [k, lim] : m.shapes)
    shapes[k] = {{"min", lim.min ? nlohmann::json(*lim.min) : nlohmann::json()},
                 {"max", lim.max ? nlohmann::json(*lim.max) : nlohmann::json()}};
  return shapes;
}

std::optional<KernelManifest> load_manifest(const std::string& path, std::string* error) {
  std::optional<nlohmann::json> j = read_manifest_json(path, error);
  if (!j) return std::nullopt;
  ManifestReader r{path, *j, error, {}};
  if (!r.check_fields()) return std::nullopt;
  r.m.manifest_path = path;
  if (!r.read_kernel() || !r.read_dtypes_and_attrs() || !r.read_shapes_and_ranks() || !r.read_layouts_and_structure() ||
      !r.read_reference())
    return std::nullopt;
  if (j->contains("expect")) r.m.expect = (*j)["expect"];
  return std::move(r.m);
}

void apply_contract_defaults(KernelManifest* m, const OpSchema* schema) {
  if (!is_python_module(*m)) return;
  if (m->layouts.empty()) m->layouts = {"contiguous"};
  if (schema)
    for (const auto& [dim, domain] : schema->dims)
      if (domain.zero_allowed && !m->shapes[dim].min) m->shapes[dim].min = 1;
}

bool is_layout_name(const std::string& name) {
  static const std::set<std::string> known = {"contiguous", "transposed", "strided", "offset", "expanded", "channels_last"};
  return known.count(name) > 0;
}

bool parse_attr_flag(const std::string& kv, std::string* key, AttrValue* value, std::string* error) {
  auto eq = kv.find('=');
  if (eq == std::string::npos || eq == 0) return (*error = "--attr expects name=value, got '" + kv + "'", false);
  *key = kv.substr(0, eq);
  std::string v = kv.substr(eq + 1);
  if (v == "true" || v == "false") {
    *value = (v == "true");
    return true;
  }
  try {
    size_t used = 0;
    long long i = std::stoll(v, &used);
    if (used == v.size()) {
      *value = int64_t(i);
      return true;
    }
    double d = std::stod(v, &used);
    if (used == v.size()) {
      *value = d;
      return true;
    }
  } catch (...) {
  }
  return (*error = "--attr " + *key + ": '" + v + "' is not a number or a bool", false);
}

bool is_python_module(const KernelManifest& m) {
  const std::string& s = m.source;
  return s.size() > 3 && s.compare(s.size() - 3, 3, ".py") == 0;
}

std::string python_load_entry(const KernelManifest& m, const std::string& entry) {
  // A line of its own: neither a class name nor a path holds a newline (python/gauntlet_worker/loading.py).
  const std::string constants = m.module_constants.empty() ? "" : "\nconstants=" + m.module_constants;
  if (m.reference.empty()) return entry + constants;
  char resolved[PATH_MAX];
  return entry + "|" + (realpath(m.reference.c_str(), resolved) ? std::string(resolved) : m.reference) + constants;
}

}  // namespace gauntlet
