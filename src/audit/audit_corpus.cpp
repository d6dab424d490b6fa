// What an audit verifies: the entries of a corpus (manifests, modules, JSONL pairs) and its shards.
#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "gauntlet/audit/audit.h"
#include "gauntlet/build/builder.h"
#include "gauntlet/kernelbench/kernelbench.h"
#include "gauntlet/audit/results_db.h"

namespace gauntlet {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string real_path(const std::string& p) {
  char buf[PATH_MAX];
  return realpath(p.c_str(), buf) ? std::string(buf) : p;
}

using FolderId = std::pair<dev_t, ino_t>;

// Files under dir, sorted; a folder that cannot be listed is reported in *unreadable, not skipped.
// Each folder is walked once, however many links lead to it: a symlink cycle ends there.
void walk(const std::string& dir, std::vector<std::string>* files, std::vector<std::string>* unreadable,
          std::set<FolderId>* seen) {
  struct stat self {};
  if (stat(dir.c_str(), &self) == 0 && !seen->insert({self.st_dev, self.st_ino}).second) return;
  DIR* d = opendir(dir.c_str());
  if (!d) return unreadable->push_back(dir);
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  std::vector<std::string> linked;  // folders reached through a symlink: after the real ones, so a
                                    // folder is named by its own path where it has one here
  for (const std::string& name : names) {
    const std::string path = dir + "/" + name;
    struct stat st {}, lst {};
    if (stat(path.c_str(), &st) != 0) files->push_back(path);  // a dangling link: reported unreadable
    else if (!S_ISDIR(st.st_mode)) files->push_back(path);
    else if (lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) linked.push_back(path);
    else walk(path, files, unreadable, seen);
  }
  for (const std::string& path : linked) walk(path, files, unreadable, seen);
}

// An entry that cannot be verified. Its key hashes the entry's name and bytes, so a rerun finds the
// same record and a repaired entry gets a new one.
CorpusEntry error_entry(const std::string& entry, const std::string& file, const std::string& error) {
  CorpusEntry e;
  e.entry = entry;
  e.error = error;
  std::string bytes;
  if (std::ifstream in{file, std::ios::binary}) {
    std::ostringstream ss;
    ss << in.rdbuf();
    bytes = ss.str();
  }
  e.kernel_hash = sha256_hex("entry-error\n" + entry + "\n" + bytes);
  return e;
}

CorpusEntry manifest_entry(const std::string& entry, KernelManifest m) {
  CorpusEntry e;
  e.entry = entry;
  // verify_kernel would refuse an unreadable source as bad input; in an audit it is a bad entry.
  std::ifstream probe(m.source, std::ios::binary);
  struct stat st {};
  if (!probe || stat(m.source.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    return error_entry(entry, "", "cannot read kernel source " + m.source);
  e.kernel_hash = sha256_file_hex(m.source);
  e.manifest_hash = manifest_hash(m);
  e.manifest = std::move(m);
  return e;
}

// KernelBench modules (a .py or a .jsonl): kernelbench.h discovers and maps them.
std::vector<CorpusEntry> module_entries(const std::string& path, const std::string& shown, const std::string& work_dir,
                                        std::string* error) {
  static const auto map = [] {
    std::string e;
    return kernelbench::load_problem_map(kernelbench::default_problem_map_path(), &e);
  }();
  std::vector<CorpusEntry> out;
  if (!map) {
    out.push_back(error_entry(shown, path, "no KernelBench problem map (" + kernelbench::default_problem_map_path() + ")"));
    return out;
  }
  kernelbench::DiscoverOptions opts;
  opts.work_dir = work_dir;
  std::string err;
  auto found = kernelbench::discover(path, *map, opts, &err);
  if (found.empty() && !err.empty()) {
    out.push_back(error_entry(shown, path, err));
    return out;
  }
  for (const kernelbench::ModuleEntry& me : found) {
    // A JSONL line's module lives in work_dir: name it by its line, not by the generated file.
    std::string name = shown;
    nlohmann::json info;
    if (ends_with(path, ".jsonl")) {
      name = shown + ":" + std::to_string(me.line);
      info = {{"line", me.line}, {"fields", me.fields}};
      if (!me.name.empty()) info["name"] = me.name;
    }
    // Mapped problems verify against their schema, the others against their own Model (module oracle).
    auto m = kernelbench::module_manifest_for(me, &err);
    out.push_back(m ? manifest_entry(name, *m) : error_entry(name, me.source, err));
    out.back().info = std::move(info);
  }
  if (!err.empty() && error && out.empty()) *error = err;
  return out;
}

}  // namespace

std::optional<std::vector<CorpusEntry>> discover_corpus(const std::string& path, const std::string& work_dir,
                                                        std::string* error) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return (*error = "cannot read " + path + ": no such file or folder", std::nullopt);
  std::vector<CorpusEntry> out;
  std::string err;
  if (!S_ISDIR(st.st_mode)) {
    if (ends_with(path, ".json")) {
      auto m = load_manifest(path, &err);
      out.push_back(m ? manifest_entry(path, *m) : error_entry(path, path, err));
    } else if (ends_with(path, ".py") || ends_with(path, ".jsonl")) {
      out = module_entries(path, path, work_dir, &err);
    } else {
      return (*error = path + ": not a kernel.json manifest, a .py module, a .jsonl file or a folder", std::nullopt);
    }
    return out;
  }
  std::string root = path;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  std::vector<std::string> files, unreadable;
  std::set<FolderId> seen;
  walk(root, &files, &unreadable, &seen);
  auto rel = [&](const std::string& p) { return p.substr(root.size() + 1); };
  // Manifests first: the sources they name are theirs, not entries of their own.
  std::set<std::string> named_sources;
  for (const std::string& f : files) {
    if (!ends_with(f, ".json")) continue;
    auto m = load_manifest(f, &err);
    if (!m) {
      out.push_back(error_entry(rel(f), f, err));
      continue;
    }
    named_sources.insert(real_path(m->source));
    out.push_back(manifest_entry(rel(f), *m));
  }
  for (const std::string& f : files) {
    if (named_sources.count(real_path(f))) continue;
    if (ends_with(f, ".py") || ends_with(f, ".jsonl")) {
      for (CorpusEntry& e : module_entries(f, rel(f), work_dir, &err)) out.push_back(std::move(e));
    } else if (ends_with(f, ".cpp") || ends_with(f, ".cu")) {
      out.push_back(error_entry(rel(f), f, "a kernel source that no manifest names: no op to verify it against"));
    }
  }
  for (const std::string& d : unreadable)
    out.push_back(error_entry(d == root ? d : rel(d), "", "cannot list folder " + d));
  std::stable_sort(out.begin(), out.end(), [](const CorpusEntry& a, const CorpusEntry& b) { return a.entry < b.entry; });
  return out;
}

std::optional<Shard> parse_shard(const std::string& text, std::string* error) {
  const size_t slash = text.find('/');
  auto number = [](const std::string& s, int* v) {
    if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos) return false;
    *v = std::atoi(s.c_str());
    return true;
  };
  Shard s;
  if (slash == std::string::npos || !number(text.substr(0, slash), &s.index) || !number(text.substr(slash + 1), &s.count) ||
      s.count < 1 || s.index >= s.count)
    return (*error = "--shard: '" + text + "' is not i/n with 0 <= i < n (e.g. 0/4)", std::nullopt);
  return s;
}

std::optional<Shard> shard_from_environment(int count_flag, std::string* error) {
  auto env = [](const char* name) -> std::string {
    const char* v = getenv(name);
    return v ? v : "";
  };
  auto number = [&](const char* name, int* v) {
    const std::string s = env(name);
    if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos)
      return (*error = std::string(name) + "='" + s + "' is not a non-negative integer", false);
    *v = std::atoi(s.c_str());
    return true;
  };
  Shard s;
  if (!env("SLURM_ARRAY_TASK_ID").empty()) {
    // A job array may start anywhere (--array=1-8): its index is the id less the array's minimum.
    int id = 0, min = 0;
    if (!number("SLURM_ARRAY_TASK_ID", &id)) return std::nullopt;
    if (!env("SLURM_ARRAY_TASK_MIN").empty() && !number("SLURM_ARRAY_TASK_MIN", &min)) return std::nullopt;
    if (env("SLURM_ARRAY_TASK_COUNT").empty())
      return (*error = "SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not; give --shard i/n", std::nullopt);
    if (!number("SLURM_ARRAY_TASK_COUNT", &s.count)) return std::nullopt;
    s.index = id - min;
  } else if (!env("JOB_COMPLETION_INDEX").empty()) {
    if (!number("JOB_COMPLETION_INDEX", &s.index)) return std::nullopt;
    if (count_flag > 0) s.count = count_flag;
    else if (env("GAUNTLET_SHARD_COUNT").empty())
      return (*error = "JOB_COMPLETION_INDEX is set: give the job's completions as --shard-count N or GAUNTLET_SHARD_COUNT", std::nullopt);
    else if (!number("GAUNTLET_SHARD_COUNT", &s.count)) return std::nullopt;
  } else {
    return s;
  }
  if (s.count < 1 || s.index < 0 || s.index >= s.count)
    return (*error = "shard " + std::to_string(s.index) + " of " + std::to_string(s.count) + " from the environment is out of range", std::nullopt);
  return s;
}

int shard_of(const std::string& kernel_hash, int count) {
  if (count <= 1) return 0;
  const uint64_t h = std::strtoull(kernel_hash.substr(0, 16).c_str(), nullptr, 16);
  return int(h % uint64_t(count));
}

}  // namespace gauntlet
