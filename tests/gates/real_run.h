// Test helper: a corpus kernel built and ready for one gate's run in the real sandbox.
#pragma once
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "gauntlet/build/builder.h"
#include "gauntlet/cases/gate.h"
#include "../test_files.h"

namespace gauntlet::testing {

inline OpSchema load_test_schema(const std::string& op) {
  std::vector<SchemaIssue> issues;
  auto s = load_schema_file(std::string(GAUNTLET_SOURCE_DIR) + "/opschemas/" + op + ".json", &issues);
  EXPECT_TRUE(s) << op;
  return s ? *s : OpSchema{};
}

// `rel_manifest` is relative to corpus/ (e.g. "controls/sum.json") or absolute; the kernel is built with its
// forward entry and, where the manifest names one, its backward entry (as verify builds it);
// replay files go to a temporary folder /tmp/gauntlet-<tag>-test-XXXXXX removed with the object.
struct CorpusKernelRun {
  OpSchema schema;
  KernelManifest manifest;
  BuildResult build;
  std::unique_ptr<CaseSpace> space;
  Launcher launcher{SandboxOptions{}};
  std::string replay_dir;
  std::unique_ptr<GateContext> ctx;

  // `options`: the children's sandbox (a fake GPU's turn lock, say); the defaults otherwise.
  explicit CorpusKernelRun(const std::string& rel_manifest, uint64_t seed = 5, const std::string& tag = "gate",
                           const SandboxOptions& options = SandboxOptions{})
      : launcher(options) {
    std::string error;
    // An absolute path is taken as it is (manifests a test writes itself).
    const std::string path =
        rel_manifest.rfind('/', 0) == 0 ? rel_manifest : std::string(GAUNTLET_SOURCE_DIR) + "/corpus/" + rel_manifest;
    auto m = load_manifest(path, &error);
    EXPECT_TRUE(m) << error;
    if (m) manifest = *m;
    schema = load_test_schema(manifest.op);
    BuildRequest req;
    req.source_path = manifest.source;
    req.entries = {manifest.entry};
    if (!manifest.backward_entry.empty()) req.entries.push_back(manifest.backward_entry);
    build = build_kernel(req, default_build_config());
    EXPECT_TRUE(build.ok) << build.error;
    space = std::make_unique<CaseSpace>(schema, manifest);
    std::string tmpl = "/tmp/gauntlet-" + tag + "-test-XXXXXX";
    replay_dir = mkdtemp(tmpl.data());
    ctx = std::make_unique<GateContext>(GateContext{schema, manifest, *space, launcher, build.so_path,
                                                    build.source_hash, "", seed, 1, replay_dir, ""});
  }
  ~CorpusKernelRun() { remove_tree(replay_dir); }
};

}  // namespace gauntlet::testing
