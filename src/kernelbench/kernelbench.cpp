// KernelBench modules: KernelBench's file naming, looking problems up in the problem -> op schema
// map (loaded in problem_map.cpp), and discovery of candidate modules in the shapes public corpora
// ship them.
#include "gauntlet/kernelbench/kernelbench.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace fs = std::filesystem;

namespace gauntlet::kernelbench {
namespace {

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

// Digits at s[pos...]; advances pos. -1 when there are none or too many.
int take_int(const std::string& s, size_t* pos) {
  size_t b = *pos;
  while (*pos < s.size() && std::isdigit(static_cast<unsigned char>(s[*pos]))) ++*pos;
  if (*pos == b || *pos - b > 9) return -1;
  return std::stoi(s.substr(b, *pos - b));
}

bool eat(const std::string& s, size_t* pos, const std::string& lit) {
  if (s.compare(*pos, lit.size(), lit) != 0) return false;
  *pos += lit.size();
  return true;
}

// "level1", "level_1" -> 1; else 0.
int folder_level(const std::string& c) {
  size_t pos = 0;
  if (!eat(c, &pos, "level")) return 0;
  eat(c, &pos, "_");
  int l = take_int(c, &pos);
  return (l > 0 && pos == c.size()) ? l : 0;
}

// "Softmax_" / "softmax" -> "softmax": case and trailing underscores do not distinguish names.
std::string norm_title(std::string t) {
  while (!t.empty() && t.back() == '_') t.pop_back();
  for (auto& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return t;
}

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Whether `word` occurs with no identifier character before it (and, if whole, none after).
bool has_word(const std::string& text, const std::string& word, bool whole) {
  for (size_t p = text.find(word); p != std::string::npos; p = text.find(word, p + 1)) {
    if (p > 0 && ident_char(text[p - 1])) continue;
    size_t e = p + word.size();
    if (whole && e < text.size() && ident_char(text[e])) continue;
    return true;
  }
  return false;
}

bool read_text(const std::string& path, std::string* text, std::string* error) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return (*error = "cannot read " + path + ": not a readable regular file", false);
  std::ifstream in(path, std::ios::binary);
  if (!in) return (*error = "cannot read " + path + ": unreadable", false);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return (*error = "cannot read " + path + ": read error", false);
  *text = ss.str();
  return true;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Fills entry.problem/mapping/device/error from the candidate text and a name to parse.
void classify(ModuleEntry* e, const std::string& text, const std::string& name, const ProblemMap& map) {
  e->problem = parse_problem_name(name);
  if (const ProblemMapping* m = map.lookup(name)) e->mapping = *m;
  e->device = module_device(text);
  if (!is_python_text(text)) e->error = e->source + ": not a Python module: not UTF-8 text (a binary file?)";
  else if (!defines_model_new(text)) e->error = "not a KernelBench module: no class ModelNew in " + e->source;
}

std::string find_reference(const std::string& root, int level, int id) {
  if (root.empty() || level <= 0 || id <= 0) return "";
  std::error_code ec;
  std::string prefix = std::to_string(id) + "_";
  std::vector<std::string> hits;
  for (const auto& d : {root + "/level" + std::to_string(level), root + "/level_" + std::to_string(level)}) {
    for (fs::directory_iterator it(d, ec), end; !ec && it != end; it.increment(ec)) {
      std::string f = it->path().filename().string();
      if (f.rfind(prefix, 0) == 0 && ends_with(f, ".py")) hits.push_back(it->path().string());
    }
    ec.clear();
  }
  std::sort(hits.begin(), hits.end());
  return hits.size() == 1 ? hits[0] : "";
}

ModuleEntry py_entry(const std::string& path, const ProblemMap& map, const DiscoverOptions& opt) {
  ModuleEntry e;
  e.source = path;
  std::string text, err;
  if (!read_text(path, &text, &err)) {
    e.problem = parse_problem_name(path);
    e.error = err;
    return e;
  }
  classify(&e, text, path, map);
  if (e.problem && e.problem->sample >= 0)  // a run-layout kernel: its reference lives in the KernelBench tree
    e.reference = find_reference(opt.reference_root, e.problem->level ? e.problem->level : map.level, e.problem->id);
  return e;
}

std::vector<ModuleEntry> jsonl_entries(const std::string& path, const ProblemMap& map,
                                       const DiscoverOptions& opt, std::string* error) {
  std::string text;
  if (!read_text(path, &text, error)) return {};
  if (opt.work_dir.empty()) return (*error = path + ": a JSONL input needs a work directory for its modules", std::vector<ModuleEntry>{});
  std::error_code ec;
  fs::create_directories(opt.work_dir, ec);
  if (ec || !fs::is_directory(opt.work_dir)) {
    *error = "cannot create work directory " + opt.work_dir + ": " + ec.message();
    return {};
  }
  std::string stem = fs::path(path).stem().string();
  std::vector<ModuleEntry> out;
  std::istringstream lines(text);
  std::string line;
  for (int n = 1; std::getline(lines, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    ModuleEntry e;
    std::string where = path + ":" + std::to_string(n);
    e.source = where;
    e.line = n;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& ex) {
      std::string what = ex.what();
      auto b = what.find(']');
      e.error = where + ": malformed JSON: " + (b == std::string::npos ? what : what.substr(b + 2));
      out.push_back(e);
      continue;
    }
    auto bad = [&](const std::string& msg) {
      e.error = where + ": " + msg;
      out.push_back(e);
    };
    if (!j.is_object()) { bad("a line is a JSON object {\"ref\": ..., \"candidate\": ...}"); continue; }
    // What people call the line by, kept even when the line is not usable.
    for (const char* k : {"name", "problem_name"})
      if (e.name.empty() && j.contains(k) && j[k].is_string()) e.name = j[k].get<std::string>();
    for (auto it = j.begin(); it != j.end(); ++it)
      if (it.key() != "ref" && it.key() != "candidate" && it.key() != "name" && it.key() != "problem_name")
        e.fields[it.key()] = it.value();
    if (!j.contains("candidate") || !j["candidate"].is_string()) { bad("field 'candidate': required string (the candidate module's source)"); continue; }
    if (j.contains("ref") && !j["ref"].is_string()) { bad("field 'ref': must be a string (the reference module's source)"); continue; }
    // A problem name if the line gives one: "name"/"problem_name", or "level" + "problem_id".
    std::string name;
    for (const char* k : {"name", "problem_name"})
      if (name.empty() && j.contains(k) && j[k].is_string()) name = j[k].get<std::string>();
    int level = (j.contains("level") && j["level"].is_number_integer()) ? j["level"].get<int>() : 0;
    if (name.empty() && j.contains("problem_id") && j["problem_id"].is_number_integer())
      name = "level_" + std::to_string(level ? level : map.level) + "_problem_" + std::to_string(j["problem_id"].get<int>());
    else if (!name.empty() && level > 0 && name.find('/') == std::string::npos && name.rfind("level", 0) != 0)
      name = "level" + std::to_string(level) + "/" + name;
    std::string base = opt.work_dir + "/" + stem + "_" + std::to_string(n);
    std::string cand = base + "_candidate.py";
    std::string cand_text = j["candidate"].get<std::string>();
    {
      std::ofstream f(cand, std::ios::binary);
      f << cand_text;
      if (!f) { bad("cannot write " + cand); continue; }
    }
    if (j.contains("ref")) {
      std::string ref = base + "_ref.py";
      std::ofstream f(ref, std::ios::binary);
      f << j["ref"].get<std::string>();
      if (!f) { bad("cannot write " + ref); continue; }
      e.reference = ref;
    }
    e.source = cand;
    if (!name.empty()) {
      e.problem = parse_problem_name(name);
      if (const ProblemMapping* m = map.lookup(name)) e.mapping = *m;
    }
    e.device = module_device(cand_text);
    if (!is_python_text(cand_text)) e.error = where + ": field 'candidate': not UTF-8 text without NUL bytes";
    else if (!defines_model_new(cand_text)) e.error = where + ": not a KernelBench module: no class ModelNew in 'candidate'";
    out.push_back(e);
  }
  return out;
}

}  // namespace

std::optional<ProblemRef> parse_problem_name(const std::string& name_or_path) {
  std::string s = name_or_path;
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  std::vector<std::string> parts;
  for (size_t b = 0;;) {
    size_t slash = s.find('/', b);
    parts.push_back(s.substr(b, slash == std::string::npos ? std::string::npos : slash - b));
    if (slash == std::string::npos) break;
    b = slash + 1;
  }
  std::string last = parts.back();
  if (ends_with(last, ".py")) last.resize(last.size() - 3);
  ProblemRef r;
  size_t pos = 0;
  if (eat(last, &pos, "level_") || (pos = 0, eat(last, &pos, "level"))) {
    // Run layout: level_<L>_problem_<id>[_sample_<k>][_kernel|...]
    r.level = take_int(last, &pos);
    if (r.level <= 0 || !eat(last, &pos, "_problem_")) return std::nullopt;
    r.id = take_int(last, &pos);
    if (r.id <= 0) return std::nullopt;
    if (eat(last, &pos, "_sample_")) {
      r.sample = take_int(last, &pos);
      if (r.sample < 0) return std::nullopt;
    }
    if (pos != last.size() && last[pos] != '_') return std::nullopt;
    return r;
  }
  // Reference style: <id>_<Title>, level from the nearest "level<L>" folder.
  pos = 0;
  r.id = take_int(last, &pos);
  if (r.id <= 0 || pos >= last.size() || last[pos] != '_' || pos + 1 == last.size()) return std::nullopt;
  r.title = last.substr(pos + 1);
  if (all_digits(r.title)) return std::nullopt;
  for (size_t i = parts.size() - 1; i-- > 0;)
    if (int l = folder_level(parts[i])) {
      r.level = l;
      break;
    }
  return r;
}

const ProblemMapping* ProblemMap::lookup(const std::string& name_or_path) const {
  auto r = parse_problem_name(name_or_path);
  if (!r || (r->level != 0 && r->level != level)) return nullptr;
  for (const auto& p : problems) {
    if (p.id != r->id) continue;
    if (!r->title.empty()) {
      std::string mapped = p.name.substr(p.name.find('_') + 1);
      if (norm_title(mapped) != norm_title(r->title)) return nullptr;
    }
    return &p;
  }
  return nullptr;
}

bool is_python_text(const std::string& bytes) {
  for (size_t i = 0; i < bytes.size();) {
    const unsigned char c = static_cast<unsigned char>(bytes[i]);
    if (c == 0) return false;
    const size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > bytes.size()) return false;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(bytes[i + k]) >> 6) != 0x2) return false;
    i += n;
  }
  return true;
}

bool defines_model_new(const std::string& text) {
  const std::string key = "class ModelNew";
  for (size_t p = text.find(key); p != std::string::npos; p = text.find(key, p + 1)) {
    size_t b = p;
    while (b > 0 && (text[b - 1] == ' ' || text[b - 1] == '\t')) --b;
    if (b != 0 && text[b - 1] != '\n') continue;
    size_t e = p + key.size();
    if (e < text.size() && ident_char(text[e])) continue;  // class ModelNewer
    return true;
  }
  return false;
}

std::string module_device(const std::string& text) {
  if (has_word(text, "cuda", false) || has_word(text, "triton", true) || has_word(text, "__global__", true)) return "cuda";
  return "cpu";
}

std::vector<ModuleEntry> discover(const std::string& path, const ProblemMap& map,
                                  const DiscoverOptions& options, std::string* error) {
  std::error_code ec;
  auto st = fs::status(path, ec);
  if (ec || !fs::exists(st)) return (*error = "cannot read " + path + ": no such file or folder", std::vector<ModuleEntry>{});
  if (fs::is_directory(st)) {
    std::vector<std::string> files;
    fs::recursive_directory_iterator it(path, fs::directory_options::skip_permission_denied, ec), end;
    if (ec) return (*error = "cannot list " + path + ": " + ec.message(), std::vector<ModuleEntry>{});
    for (; it != end; it.increment(ec)) {
      if (ec) break;
      std::error_code e2;
      if (it->is_directory(e2)) continue;
      std::string f = it->path().string();
      if (ends_with(f, ".py")) files.push_back(f);  // dangling links too: reported as unreadable
    }
    std::sort(files.begin(), files.end());
    std::vector<ModuleEntry> out;
    for (const auto& f : files) out.push_back(py_entry(f, map, options));
    return out;
  }
  if (ends_with(path, ".jsonl")) return jsonl_entries(path, map, options, error);
  if (ends_with(path, ".py")) return {py_entry(path, map, options)};
  *error = path + ": not a .py module, a .jsonl file of {\"ref\", \"candidate\"} pairs, or a folder";
  return {};
}

std::optional<KernelManifest> manifest_for(const ModuleEntry& e, std::string* error) {
  if (!e.error.empty()) return (*error = e.error, std::nullopt);
  if (!e.mapping)
    return (*error = e.source + ": no op schema for this module (not a mapped KernelBench problem); give --op", std::nullopt);
  KernelManifest m;
  m.op = e.mapping->op;
  m.source = e.source;
  m.entry = "ModelNew";
  m.device = e.device;
  m.attrs = e.mapping->attrs;
  m.shapes = e.mapping->shapes;
  m.dtypes = e.mapping->dtypes.empty() ? std::vector<DType>{DType::Float32} : e.mapping->dtypes;
  // The problem's contract (SPEC): the ranks get_inputs() builds, the dims it makes equal, and
  // contiguous inputs; other ranks, sizes apart and layouts must be refused or right.
  for (size_t i = 0; i < e.mapping->input_ranks.size() && i < e.mapping->inputs.size(); ++i)
    m.ranks[e.mapping->inputs[i]] = {int64_t(e.mapping->input_ranks[i])};
  m.equal_dims = e.mapping->equal_dims;
  m.layouts = {"contiguous"};
  // And its get_inputs()' exact shapes and dtype, bound once the module is built (verify).
  m.shapes_from_get_inputs = true;
  m.problem_inputs = e.mapping->inputs;
  return m;
}

std::optional<KernelManifest> manifest_for_module_file(const std::string& path, std::string* error) {
  auto map = load_problem_map(default_problem_map_path(), error);
  if (!map) return std::nullopt;
  std::vector<ModuleEntry> found = discover(path, *map, {}, error);
  if (found.size() != 1) {
    if (error->empty()) *error = path + ": not one Python module";
    return std::nullopt;
  }
  return module_manifest_for(found[0], error);
}

std::optional<KernelManifest> module_manifest_for(const ModuleEntry& e, std::string* error) {
  if (!e.error.empty()) return (*error = e.error, std::nullopt);
  std::optional<KernelManifest> m;
  if (e.mapping) {
    m = manifest_for(e, error);
  } else {
    m = KernelManifest{};
    m->op = "module";  // kModuleOp: the module's own Model is the oracle
    m->source = e.source;
    m->entry = "ModelNew";
    m->device = e.device;
    m->layouts = {"contiguous"};  // its problem's contract; its shapes are get_inputs()' own
  }
  if (m) m->reference = e.reference;
  return m;
}

}  // namespace gauntlet::kernelbench
