// The source tree's layering (docs/architecture.md): each concept folder includes only the folders
// below it, the worker only what it shares with the parent, and private headers stay in their folder.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

// Bottom layer first; a folder may include its own headers and those of the folders before it.
const std::vector<std::string> kLayers = {"common", "schema",  "sandbox", "build", "oracle", "cases",
                                          "kernelbench", "gates", "run", "audit", "report", "main"};
// Folders outside the layers: the sandboxed worker (which may include only what it shares with the
// parent) and code that is built into kernels or modules, not into gauntlet.
const std::vector<std::string> kWorkerMayInclude = {"common", "sandbox"};
const std::vector<std::string> kNotLayered = {"worker", "prelude", "prelude_full", "pyworker"};

int rank_of(const std::string& folder) {
  for (size_t i = 0; i < kLayers.size(); ++i)
    if (kLayers[i] == folder) return int(i);
  return -1;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  for (const std::string& x : v)
    if (x == s) return true;
  return false;
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The layering violations under `root` (a checkout: src/, include/gauntlet/, gates/), one line each.
std::vector<std::string> layering_violations(const fs::path& root) {
  std::vector<std::string> bad;
  struct Unit {
    fs::path path;
    std::string folder;
  };
  std::vector<Unit> units;
  auto add_dir = [&](const fs::path& dir, const std::string& folder) {
    if (!fs::is_directory(dir)) return;
    for (const auto& e : fs::directory_iterator(dir)) {
      const std::string ext = e.path().extension().string();
      if (e.is_regular_file() && (ext == ".cpp" || ext == ".h")) units.push_back({e.path(), folder});
    }
  };
  for (const auto& e : fs::directory_iterator(root / "src")) {
    if (!e.is_directory()) continue;
    const std::string folder = e.path().filename().string();
    if (contains(kNotLayered, folder) && folder != "worker") continue;
    if (folder != "worker" && rank_of(folder) < 0) {
      bad.push_back("src/" + folder + ": a folder that is not in the layer table (tests/layers_test.cpp)");
      continue;
    }
    add_dir(e.path(), folder);
  }
  for (const auto& e : fs::directory_iterator(root / "include" / "gauntlet")) {
    if (!e.is_directory()) continue;
    const std::string folder = e.path().filename().string();
    if (rank_of(folder) < 0) bad.push_back("include/gauntlet/" + folder + ": a folder that is not in the layer table");
    else add_dir(e.path(), folder);
  }
  add_dir(root / "gates", "gates");
  const std::regex public_include(R"re(#include "gauntlet/([a-z_]+)/[a-z_0-9]+\.h")re");
  const std::regex private_include(R"re(#include "([a-z_0-9]+\.h)")re");
  for (const Unit& u : units) {
    const std::string text = read_all(u.path);
    const std::string name = fs::relative(u.path, root).string();
    for (std::sregex_iterator it(text.begin(), text.end(), public_include), end; it != end; ++it) {
      const std::string dep = (*it)[1];
      if (u.folder == "worker") {
        if (!contains(kWorkerMayInclude, dep)) bad.push_back(name + " (the worker) includes " + it->str());
      } else if (rank_of(dep) < 0) {
        bad.push_back(name + " includes " + it->str() + ", a folder not in the layer table");
      } else if (rank_of(dep) > rank_of(u.folder)) {
        bad.push_back(name + " (" + u.folder + ") includes " + it->str() + " from a layer above it");
      }
    }
    for (std::sregex_iterator it(text.begin(), text.end(), private_include), end; it != end; ++it)
      if (!fs::exists(u.path.parent_path() / std::string((*it)[1])))
        bad.push_back(name + " includes " + it->str() + ", which is not in its own folder");
  }
  return bad;
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

TEST(SourceLayers, EveryIncludeGoesDownTheLayers) {
  const std::vector<std::string> bad = layering_violations(GAUNTLET_SOURCE_DIR);
  std::string all;
  for (const std::string& b : bad) all += "\n  " + b;
  EXPECT_TRUE(bad.empty()) << bad.size() << " layering violations:" << all;
}

// The check itself, on a small tree with one violation of each kind planted beside a clean include.
TEST(SourceLayers, PlantedViolationsAreEachReported) {
  const fs::path root = fs::temp_directory_path() / ("gauntlet-layers-" + std::to_string(::getpid()));
  fs::remove_all(root);
  write(root / "include/gauntlet/common/types.h", "#pragma once\n");
  write(root / "include/gauntlet/run/verify.h", "#include \"gauntlet/common/types.h\"\n");  // down: fine
  write(root / "src/cases/judge.cpp", "#include \"gauntlet/run/verify.h\"\n");             // up
  write(root / "src/worker/serve.cpp", "#include \"gauntlet/run/verify.h\"\n");            // worker
  write(root / "src/oracle/oracle.cpp", "#include \"oracle_internal.h\"\n");               // elsewhere
  write(root / "src/run/replay.cpp", "#include \"replay_sources.h\"\n");
  write(root / "src/run/replay_sources.h", "#pragma once\n");                                // same folder: fine
  write(root / "src/parent/old.cpp", "\n");                                                  // unknown folder
  write(root / "gates/accuracy.cpp", "#include \"gauntlet/report/html.h\"\n");             // up from gates
  const std::vector<std::string> bad = layering_violations(root);
  fs::remove_all(root);
  auto reported = [&](const std::string& part) {
    for (const std::string& b : bad)
      if (b.find(part) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(reported("src/cases/judge.cpp (cases) includes")) << "an include from a layer above";
  EXPECT_TRUE(reported("src/worker/serve.cpp (the worker)"));
  EXPECT_TRUE(reported("src/oracle/oracle.cpp includes #include \"oracle_internal.h\""));
  EXPECT_TRUE(reported("src/parent: a folder that is not in the layer table"));
  EXPECT_TRUE(reported("gates/accuracy.cpp (gates) includes"));
  auto reported_file = [&](const std::string& name) {
    for (const std::string& b : bad)
      if (b.rfind(name, 0) == 0) return true;
    return false;
  };
  EXPECT_FALSE(reported_file("src/run/replay.cpp")) << "a private header in its own folder";
  EXPECT_FALSE(reported_file("include/gauntlet/run/verify.h")) << "an include of a lower layer";
  EXPECT_EQ(bad.size(), 5u);
}

}  // namespace
