// A sandboxed child's filesystem (SPEC Sandbox; docs/modules.md, "Filesystem"): read-only everywhere
// but its private /tmp and fresh tmpfs over /var/tmp, /dev/shm and /run/lock, so nothing it writes
// reaches the host or a later child. Real children (zygote and fork+exec) run a probe kernel that
// writes a marker in each place and reports what it saw; the host is checked afterwards. The
// control runs the same probe without namespaces, where the writes do land (and are cleaned up).
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "gauntlet/builder.h"
#include "gauntlet/fs_lockdown.h"
#include "gauntlet/sandbox.h"

namespace gauntlet {
namespace {

TEST(SandboxFilesystem, ParsesMountinfoPointsAndFlags) {
  const std::string text =
      "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n"
      "28 27 0:25 / /mnt/with\\040space ro,nosuid,nodev,noexec,noatime - tmpfs t ro\n"
      "bad line\n";
  const std::vector<MountPoint> m = parse_mountinfo(text);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].path, "/");
  EXPECT_EQ(m[0].flags, (unsigned long)MS_RELATIME);
  EXPECT_EQ(m[1].path, "/mnt/with space");
  EXPECT_EQ(m[1].flags, (unsigned long)(MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME));
  EXPECT_EQ(world_writable_dirs(), (std::vector<std::string>{"/tmp", "/var/tmp", "/dev/shm", "/run/lock"}));
}

std::string exe_dir() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  std::string p(buf, n > 0 ? size_t(n) : 0);
  return p.substr(0, p.rfind('/'));
}

bool exists(const std::string& p) {
  struct stat st {};
  return lstat(p.c_str(), &st) == 0;
}

// The probe's message: per place "<dir>=wrote" or "<dir>=<errno text>", and "seen:<dir>" for each
// marker it found before writing (one left by an earlier child).
std::string probe_source(const std::vector<std::string>& places, const std::string& name) {
  std::string list;
  for (const std::string& p : places) list += "\"" + p + "\", ";
  return R"CPP(#include <torch/torch.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <string>
torch::Tensor forward(const torch::Tensor& x) {
  std::string report;
  for (const char* d : {)CPP" + list + R"CPP("/tmp"}) {
    const std::string p = std::string(d) + "/)CPP" + name + R"CPP(";
    if (access(p.c_str(), F_OK) == 0) report += " seen:" + std::string(d);
    const int fd = open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0666);
    report += " " + std::string(d) + "=" + (fd >= 0 && write(fd, "m", 1) == 1 ? "wrote" : strerror(errno));
    if (fd >= 0) close(fd);
  }
  const int null_fd = open("/dev/null", O_WRONLY);
  report += std::string(" /dev/null=") + (null_fd >= 0 && write(null_fd, "m", 1) == 1 ? "wrote" : strerror(errno));
  TORCH_CHECK(false, report);
  return x;
}
)CPP";
}

struct Probe {
  std::string dir;   // a host directory the child's uid may write (owned by nobody), on the root filesystem
  std::string name;  // the marker's file name, unique to this test run
  std::vector<std::string> places;
  BuildResult built;
};

Probe make_probe() {
  Probe p;
  p.name = "gauntlet-fs-lockdown-test-" + std::to_string(getpid());
  std::string d = exe_dir() + "/fs-lockdown-XXXXXX";
  p.dir = mkdtemp(d.data()) ? d : "";
  if (!p.dir.empty()) {
    (void)!chown(p.dir.c_str(), 65534, 65534);  // what nobody (the dropped uid) owns stays writable to it
    chmod(p.dir.c_str(), 0777);
  }
  p.places = {"/var/tmp", "/dev/shm", "/run/lock", p.dir};
  const std::string src = p.dir + "/probe.cpp";
  std::ofstream(src) << probe_source(p.places, p.name);
  BuildRequest r;
  r.source_path = src;
  r.entries = {"forward"};
  p.built = build_kernel(r, default_build_config());
  return p;
}

std::string run_probe(const Probe& p, SandboxOptions o, std::string* notes) {
  Launcher launcher(o);
  std::string error;
  auto s = launcher.spawn(&error);
  if (!s) return "spawn failed: " + error;
  Outcome lo = s->load(p.built.so_path, "forward");
  if (lo.kind != Outcome::Kind::Ok) return "load failed: " + lo.message;
  wire::CaseRequest c;
  c.case_id = 1;
  wire::Arg a;
  a.kind = wire::Arg::Kind::Tensor;
  a.tensor = at::ones({4});
  c.args.push_back(a);
  Outcome out = s->call(c);
  *notes = s->sandbox_notes();
  return out.message;
}

void remove_markers(const Probe& p) {
  for (const std::string& d : p.places) unlink((d + "/" + p.name).c_str());
}

TEST(SandboxFilesystem, ChildWritesReachNeitherTheHostNorTheNextChild) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (the probe's host directory is owned by nobody)";
  Probe p = make_probe();
  ASSERT_TRUE(p.built.ok) << p.built.error;
  remove_markers(p);
  for (bool zygote : {true, false}) {
    SandboxOptions o;
    o.use_zygote = zygote;
    std::string notes;
    const std::string first = run_probe(p, o, &notes);
    if (notes.find("fs-writable(no mount namespace)") != std::string::npos)
      GTEST_SKIP() << "no mount namespace on this host: " << notes;
    const std::string second = run_probe(p, o, &notes);
    for (const std::string* got : {&first, &second}) {
      SCOPED_TRACE((zygote ? "zygote: " : "fork+exec: ") + *got + " | " + notes);
      // The world-writable places are writable, but private to the child (fresh tmpfs).
      for (const char* d : {"/var/tmp", "/dev/shm", "/run/lock", "/tmp", "/dev/null"})
        if (exists(d)) EXPECT_NE(got->find(std::string(" ") + d + "=wrote"), std::string::npos) << d;
      // A place its uid owns on the host is read-only.
      EXPECT_NE(got->find(" " + p.dir + "=Read-only file system"), std::string::npos);
      EXPECT_EQ(got->find("seen:"), std::string::npos) << "a child found an earlier child's marker";
    }
    EXPECT_NE(notes.find("fs-readonly("), std::string::npos) << notes;
    EXPECT_NE(notes.find("private-tmpfs(/var/tmp,/dev/shm,/run/lock)"), std::string::npos) << notes;
    for (const std::string& d : p.places) EXPECT_FALSE(exists(d + "/" + p.name)) << "left on the host: " << d;
  }
  remove_markers(p);
  std::filesystem::remove_all(p.dir);
}

// The control: without a mount namespace the same probe's writes land on the host and the next
// child sees them (so the test above can fail), and the sandbox notes say the filesystem is open.
TEST(SandboxFilesystem, WithoutAMountNamespaceTheNotesSayTheFilesystemIsWritable) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (the probe's host directory is owned by nobody)";
  Probe p = make_probe();
  ASSERT_TRUE(p.built.ok) << p.built.error;
  remove_markers(p);
  SandboxOptions o;
  o.namespaces = false;
  std::string notes;
  const std::string first = run_probe(p, o, &notes);
  const std::string second = run_probe(p, o, &notes);
  remove_markers(p);
  std::filesystem::remove_all(p.dir);
  EXPECT_NE(notes.find("fs-writable(no mount namespace)"), std::string::npos) << notes;
  EXPECT_NE(first.find(" " + p.dir + "=wrote"), std::string::npos) << first;
  EXPECT_NE(second.find("seen:" + p.dir), std::string::npos) << second;
}

}  // namespace
}  // namespace gauntlet
