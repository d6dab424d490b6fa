// The sources a replay file carries, so that it replays on another machine or after its corpus is
// gone: embedding them when a failure is recorded, and choosing recorded paths or copies on replay.
#include "gauntlet/cases/replay_sources.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <ftw.h>

#include <functional>
#include <regex>
#include <set>
#include <sstream>
#include <vector>

#include "gauntlet/build/build_cache.h"
#include "gauntlet/build/builder.h"

namespace gauntlet::replay_sources {
namespace {

// Not std::filesystem: in a binary linked with libtorch its remove_all can bind to the copy
// libtorch.so exports, which crashed on the GPU host (tests/test_files.h).
std::vector<std::string> split_path(const std::string& p) {
  std::vector<std::string> parts;
  std::istringstream in(p);
  std::string part;
  while (std::getline(in, part, '/')) parts.push_back(part);
  return parts;
}

// "a/./b/../c.h" -> "a/c.h"; leading ".." stay ("../x.h").
std::string lexically_normal(const std::string& p) {
  std::vector<std::string> out;
  for (const std::string& part : split_path(p)) {
    if (part.empty() || part == ".") continue;
    if (part == ".." && !out.empty() && out.back() != "..") out.pop_back();
    else out.push_back(part);
  }
  std::string s;
  for (const std::string& part : out) s += (s.empty() ? "" : "/") + part;
  return s.empty() ? "." : s;
}

// A source bigger than this is not a kernel anyone wrote by hand; it is not copied into the file.
constexpr size_t kMaxEmbeddedBytes = 16u << 20;

constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64_encode(const std::string& in) {
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v = uint32_t(uint8_t(in[i])) << 16 | uint32_t(uint8_t(in[i + 1])) << 8 | uint8_t(in[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += kB64[(v >> s) & 63];
  }
  if (i < in.size()) {
    uint32_t v = uint32_t(uint8_t(in[i])) << 16;
    if (i + 1 < in.size()) v |= uint32_t(uint8_t(in[i + 1])) << 8;
    out += kB64[(v >> 18) & 63];
    out += kB64[(v >> 12) & 63];
    out += i + 1 < in.size() ? kB64[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

bool base64_decode(const std::string& in, std::string* out) {
  uint32_t v = 0;
  int bits = 0;
  for (char ch : in) {
    if (ch == '=') break;
    const char* p = std::strchr(kB64, ch);
    if (!p || ch == '\0') return false;
    v = v << 6 | uint32_t(p - kB64);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      *out += char((v >> bits) & 0xff);
    }
  }
  return true;
}

// JSON strings must be UTF-8 (dump() throws otherwise): other bytes (a Latin-1 comment) travel as base64.
bool valid_utf8(const std::string& s) {
  try {
    (void)nlohmann::json(s).dump();
    return true;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

nlohmann::json file_json(const std::string& bytes) {
  nlohmann::json f = {{"sha256", sha256_hex(bytes)}};
  if (valid_utf8(bytes)) f["text"] = bytes;
  else f["base64"] = base64_encode(bytes);
  return f;
}

bool file_bytes(const nlohmann::json& f, std::string* bytes) {
  if (!f.is_object() || !f.contains("sha256")) return false;
  if (f.contains("text") && f["text"].is_string()) *bytes = f["text"].get<std::string>();
  else if (!f.contains("base64") || !f["base64"].is_string() || !base64_decode(f["base64"].get<std::string>(), bytes))
    return false;
  return sha256_hex(*bytes) == f.value("sha256", "");
}

bool read_small(const std::string& path, std::string* bytes) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || size_t(st.st_size) > kMaxEmbeddedBytes) return false;
  std::string err;
  return build_internal::read_file(path, bytes, &err);
}

std::string dir_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::string base_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The files a native source #includes "..." relative to itself, recursively, named relative to the
// source's folder (what the builder compiles with; the rest comes from the include path).
void scan_includes(const std::string& src_dir, const std::string& rel_dir, const std::string& bytes, int depth,
                   std::set<std::string>* seen, nlohmann::json* includes, nlohmann::json* unembedded) {
  static const std::regex include_re(R"(^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\")");
  if (depth > 16) return;
  std::istringstream in(bytes);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (line.find("include") == std::string::npos || !std::regex_search(line, m, include_re)) continue;
    const std::string name = m[1];
    if (name[0] == '/') {
      if (seen->insert(name).second) unembedded->push_back(name);
      continue;
    }
    const std::string rel = lexically_normal(rel_dir.empty() ? name : rel_dir + "/" + name);
    if (!seen->insert(rel).second) continue;
    std::string inc;
    if (!read_small(src_dir + "/" + rel, &inc)) continue;  // found on the include path, not beside the source
    nlohmann::json f = file_json(inc);
    f["name"] = rel;
    includes->push_back(f);
    scan_includes(src_dir, dir_of(rel) == "." ? "" : dir_of(rel), inc, depth + 1, seen, includes, unembedded);
  }
}

nlohmann::json manifest_json(const KernelManifest& m) {
  nlohmann::json j = {{"op", m.op}, {"entry", m.entry}, {"backward", m.backward_entry}, {"device", m.device},
                      {"path", m.manifest_path}};
  j["dtypes"] = manifest_dtypes_json(m);
  nlohmann::json attrs = nlohmann::json::object();
  for (const auto& [k, v] : m.attrs) std::visit([&, k = k](auto x) { attrs[k] = x; }, v);
  j["attrs"] = attrs;
  j["shapes"] = manifest_shapes_json(m);
  j["ranks"] = m.ranks;
  j["layouts"] = m.layouts;
  j["equal_dims"] = m.equal_dims;
  if (!m.structures.empty()) j["structure"] = m.structures;
  return j;
}

// The embedded contract back into *m (source and reference are set by the caller).
bool manifest_from_json(const nlohmann::json& j, KernelManifest* m, std::string* error) {
  try {
    m->op = j.at("op");
    m->entry = j.at("entry");
    m->backward_entry = j.value("backward", "");
    m->device = j.at("device");
    m->manifest_path = j.value("path", "");
    for (const auto& d : j.value("dtypes", nlohmann::json::array())) {
      auto dt = dtype_from_name(d.get<std::string>());
      if (!dt) return (*error = "its manifest names an unknown dtype " + d.dump(), false);
      m->dtypes.push_back(*dt);
    }
    // Named first: items() of a temporary would dangle in the range-for (seen as a garbage attribute).
    const nlohmann::json attrs = j.value("attrs", nlohmann::json::object());
    for (const auto& [k, v] : attrs.items()) {
      if (v.is_boolean()) m->attrs[k] = v.get<bool>();
      else if (v.is_number_integer()) m->attrs[k] = v.get<int64_t>();
      else if (v.is_number()) m->attrs[k] = v.get<double>();
      else return (*error = "its manifest's attribute " + k + " is not a number or a bool", false);
    }
    const nlohmann::json shapes = j.value("shapes", nlohmann::json::object());
    for (const auto& [k, v] : shapes.items()) {
      DimLimit lim;
      if (v.contains("min") && !v["min"].is_null()) lim.min = v["min"].get<int64_t>();
      if (v.contains("max") && !v["max"].is_null()) lim.max = v["max"].get<int64_t>();
      m->shapes[k] = lim;
    }
    // The rest of the contract (absent in files written before it existed: the schema's domain).
    m->ranks = j.value("ranks", std::map<std::string, std::vector<int64_t>>{});
    m->layouts = j.value("layouts", std::vector<std::string>{});
    m->equal_dims = j.value("equal_dims", std::vector<std::vector<std::string>>{});
    m->structures = j.value("structure", std::map<std::string, std::string>{});
  } catch (const nlohmann::json::exception& e) {
    return (*error = std::string("corrupt embedded manifest: ") + e.what(), false);
  }
  return true;
}

// "" when `path` holds exactly the bytes `f` records; else why not ("is missing", "changed").
std::string recorded_state(const std::string& path, const nlohmann::json& f) {
  const std::string sha = sha256_file_hex(path);
  if (sha.empty()) return path + " is missing";
  return sha == f.value("sha256", "") ? "" : path + " changed since the case was recorded";
}

bool write_bytes(const std::string& path, const std::string& bytes, std::string* error) {
  if (!build_internal::make_dirs(dir_of(path), error)) return false;
  if (!build_internal::write_file_atomic(path, bytes)) return (*error = "cannot write " + path, false);
  return true;
}

}  // namespace

nlohmann::json embed(const KernelManifest& m, const std::string& kernel_hash) {
  nlohmann::json s = {{"manifest", manifest_json(m)}};
  std::string bytes;
  if (read_small(m.source, &bytes) && sha256_hex(bytes) == kernel_hash) {
    nlohmann::json k = file_json(bytes);
    k["path"] = m.source;
    s["kernel"] = k;
    if (!is_python_module(m)) {
      nlohmann::json includes = nlohmann::json::array(), unembedded = nlohmann::json::array();
      std::set<std::string> seen;
      scan_includes(dir_of(m.source), "", bytes, 0, &seen, &includes, &unembedded);
      s["includes"] = includes;
      if (!unembedded.empty()) s["unembedded"] = unembedded;
    }
  }
  std::string ref;
  if (!m.reference.empty() && read_small(m.reference, &ref)) {
    nlohmann::json r = file_json(ref);
    r["path"] = m.reference;
    s["reference"] = r;
  }
  return s;
}

Resolved::~Resolved() {
  if (temp_dir.empty()) return;
  nftw(
      temp_dir.c_str(), [](const char* p, const struct stat*, int, struct FTW*) { return ::remove(p); }, 16,
      FTW_DEPTH | FTW_PHYS);
}

bool resolve(const nlohmann::json& j, Resolved* out, std::string* error) {
  const nlohmann::json& kernel = j.at("kernel");
  const std::string source = kernel.at("source");
  const std::string kernel_sha = kernel.at("sha256");
  KernelManifest& m = out->manifest;
  const nlohmann::json sources = j.value("sources", nlohmann::json::object());
  if (sources.contains("manifest")) {
    if (!manifest_from_json(sources["manifest"], &m, error)) return false;
  } else {
    // Written before replay files carried their sources: the recorded kernel must be there (said
    // first: it is what is missing after a move), and the recorded manifest is read again.
    const std::string why = recorded_state(source, {{"sha256", kernel_sha}});
    if (!why.empty())
      return (*error = "kernel source " + why +
                       "; the replay file carries no copy of it (written before replay files embedded their sources)",
              false);
    const std::string manifest_path = kernel.value("manifest", "");
    if (!manifest_path.empty()) {
      auto loaded = load_manifest(manifest_path, error);
      if (!loaded) return (*error = "its manifest: " + *error + "; the replay file carries no copy of it", false);
      m = *loaded;
    }
  }
  m.op = j.at("op");
  m.entry = kernel.at("entry");
  m.backward_entry = kernel.value("backward", m.backward_entry);
  m.device = kernel.at("device");
  m.source = source;

  // The recorded paths serve when every recorded file is there with its recorded bytes.
  std::string why;
  const nlohmann::json recorded_kernel = {{"sha256", kernel_sha}};
  why = recorded_state(source, recorded_kernel);
  for (const auto& inc : sources.value("includes", nlohmann::json::array()))
    if (why.empty()) why = recorded_state(dir_of(source) + "/" + inc.value("name", ""), inc);
  const bool has_ref = sources.contains("reference");
  if (has_ref) m.reference = sources["reference"].value("path", "");
  if (why.empty() && has_ref) why = recorded_state(m.reference, sources["reference"]);
  if (why.empty()) {
    out->note = "the recorded paths (" + source + (has_ref ? ", " + m.reference : "") + ")";
    return true;
  }
  if (!sources.contains("kernel")) {
    *error = (why.rfind(source, 0) == 0 ? "kernel source " : "") + why +
             "; the replay file carries no copy of it (written before replay files embedded their sources)";
    return false;
  }

  // Otherwise the embedded copies, laid out as they were around the source: an include "../x.h"
  // needs the source one folder down.
  size_t up = 0;
  for (const auto& inc : sources.value("includes", nlohmann::json::array())) {
    size_t n = 0;
    for (const std::string& part : split_path(inc.value("name", "")))
      if (part == "..") ++n;
    up = std::max(up, n);
  }
  std::string tmpl = std::string(getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp") +
                     "/gauntlet-replay-XXXXXX";
  if (!mkdtemp(tmpl.data())) return (*error = "cannot create a folder for the embedded sources in " + dir_of(tmpl), false);
  out->temp_dir = tmpl;
  std::string src_dir = tmpl + "/kernel";
  for (size_t i = 0; i < up; ++i) src_dir += "/_";
  std::string bytes;
  if (!file_bytes(sources["kernel"], &bytes) || sha256_hex(bytes) != kernel_sha)
    return (*error = why + ", and the copy embedded in the replay file does not hold the recorded bytes either", false);
  m.source = src_dir + "/" + base_name(source);
  if (!write_bytes(m.source, bytes, error)) return false;
  for (const auto& inc : sources.value("includes", nlohmann::json::array())) {
    const std::string name = inc.value("name", "");
    bytes.clear();
    if (name.empty() || name[0] == '/' || !file_bytes(inc, &bytes))
      return (*error = "the embedded include '" + name + "' is corrupt", false);
    if (!write_bytes(src_dir + "/" + name, bytes, error)) return false;
  }
  if (has_ref) {
    bytes.clear();
    if (!file_bytes(sources["reference"], &bytes)) return (*error = "the embedded reference module is corrupt", false);
    m.reference = tmpl + "/reference/" + base_name(sources["reference"].value("path", "reference.py"));
    if (!write_bytes(m.reference, bytes, error)) return false;
  }
  out->note = "the copies embedded in the replay file (" + why + "), written to " + tmpl;
  if (sources.contains("unembedded") && !sources["unembedded"].empty())
    out->note += "; not embedded: " + sources["unembedded"].dump();
  return true;
}

}  // namespace gauntlet::replay_sources
