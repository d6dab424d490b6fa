// End to end: the filesystem-containment kernels (corpus/hostile/fs_marker, fs_memo, the module
// corpus/modules/fs_memo) pass, because no gate child sees a file another child wrote, and after
// the run no marker or memo file is left in any place outside the children's private tmpfs. The
// control runs fs_marker without namespaces, where its markers do reach the later gates.
#include <dirent.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "e2e_util.h"

using namespace gauntlet::e2e;

namespace {

const std::string kCorpus = source_dir() + "/corpus";

// The files whose name starts with "gauntlet-hostile-fs-" in every place the kernels write to.
std::vector<std::string> leftovers() {
  std::vector<std::string> found;
  for (const std::string& d : {std::string("/var/tmp"), std::string("/dev/shm"), std::string("/run/lock"),
                               std::string("/var/tmp/gauntlet-modules"), std::string("/var/tmp/gauntlet-modules/torch_extensions"),
                               std::string("/root"), kCorpus + "/hostile", kCorpus + "/hostile_cuda", kCorpus + "/modules"}) {
    DIR* dir = opendir(d.c_str());
    if (!dir) continue;
    while (dirent* e = readdir(dir))
      if (std::string(e->d_name).rfind("gauntlet-hostile-fs-", 0) == 0) found.push_back(d + "/" + e->d_name);
    closedir(dir);
  }
  return found;
}

void remove_leftovers() {
  for (const std::string& f : leftovers()) unlink(f.c_str());
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += x + " ";
  return s;
}

void expect_contained(const std::string& manifest, const char* gates) {
  remove_leftovers();
  Verified v = verify_report({manifest, "--gates", gates});
  EXPECT_EQ(v.exit_code, 0) << v.log;
  ASSERT_TRUE(v.report.is_object()) << v.log;
  EXPECT_EQ(v.report["verdict"], "pass") << v.report["gates"].dump(1);
  const std::string isolation = v.report["environment"]["sandbox"].value("isolation", "");
  if (isolation.find("fs-writable(no mount namespace)") != std::string::npos)
    GTEST_SKIP() << "no mount namespace on this host: " << isolation;
  EXPECT_NE(isolation.find("fs-readonly("), std::string::npos) << isolation;
  EXPECT_NE(isolation.find("private-tmpfs(/var/tmp,/dev/shm"), std::string::npos) << isolation;
  const std::vector<std::string> left = leftovers();
  EXPECT_TRUE(left.empty()) << "left on the host: " << join(left);
  remove_leftovers();
}

// Several gates, each a fresh child: determinism's second process and statelessness's calls are
// where a memo would pay off.
const char* kGates = "contract,accuracy,determinism,statelessness";

TEST(FsContainment, MarkerKernelFindsNoOtherChildsFileAndLeavesNone) {
  expect_contained(kCorpus + "/hostile/fs_marker.json", kGates);
}

TEST(FsContainment, MemoKernelCannotReadAnEarlierChildsResults) {
  expect_contained(kCorpus + "/hostile/fs_memo.json", kGates);
}

TEST(FsContainment, MemoModuleCannotReadAnEarlierChildsResults) {
  REQUIRE_PYTHON_TORCH();
  expect_contained(kCorpus + "/modules/fs_memo.json", kGates);
}

// The control (without namespaces the markers leak) is SandboxFilesystem.WithoutAMountNamespace...
// in tests/sandbox/fs_lockdown_test.cpp, with markers of its own name: run here with this corpus's
// kernels it left markers in /root and the corpus folder that the containment runs beside it
// (ctest -j) then found, and its own check raced with their clean-up.

}  // namespace
