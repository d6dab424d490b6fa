// A sandboxed child's filesystem (SPEC Sandbox; docs/modules.md, "Filesystem"): read-only everywhere
// but its private /tmp and fresh tmpfs over /var/tmp, /dev/shm and /run/lock, so nothing it writes
// reaches the host or a later child. Real children (zygote and fork+exec) run a probe kernel that
// writes a marker in each place and reports what it saw; the host is checked afterwards. The
// control runs the same probe without namespaces, where the writes do land (and are cleaned up).
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "gauntlet/build/builder.h"
#include "gauntlet/sandbox/fs_lockdown.h"
#include "gauntlet/sandbox/sandbox.h"
#include "probe_case.h"

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
  // Beside the test binary, unless that is under /tmp (a clone in /tmp): each child sees /tmp as
  // its own tmpfs, so the probe there would be hidden, not read-only. /var/lib is on the root
  // filesystem and writable by root, which this test needs anyway.
  std::string base = exe_dir();
  if (base == "/tmp" || base.rfind("/tmp/", 0) == 0) base = "/var/lib";
  std::string d = base + "/fs-lockdown-XXXXXX";
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

std::string run_probe(const Probe& p, SandboxOptions o, std::string* notes) { return run_probe_case(o, p.built.so_path, notes); }

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
      for (const char* d : {"/var/tmp", "/dev/shm", "/run/lock", "/tmp", "/dev/null"}) {
        if (exists(d)) EXPECT_NE((" " + *got).find(std::string(" ") + d + "=wrote"), std::string::npos) << d;
      }
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

// The Python worker's enter_sandbox (python/gauntlet_worker/sandbox.py) locks the same way, and binds
// the module build cache back over the fresh /var/tmp: read-only for a gate child, writable only for
// a build child. Runs the function itself (no torch needed) in a private mount namespace; argv[1] is
// the worker's entry script, beside which its package lies.
const char* kPythonProbe = R"PY(import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[1])))
from gauntlet_worker import sandbox as w
p = w.Policy()
p.namespaces = w.NS_MOUNT
p.seccomp = False
os.environ["TORCH_EXTENSIONS_DIR"] = sys.argv[2]
notes, err = w.enter_sandbox(p, "cpu", build_writable=sys.argv[4] == "rw")
out = [str(notes), str(err)]
for d in ["/var/tmp", "/dev/shm", "/run/lock", "/tmp", sys.argv[2]]:
    try:
        with open(os.path.join(d, sys.argv[3]), "w") as f:
            f.write("m")
        out.append("%s=wrote" % d)
    except OSError as e:
        out.append("%s=%s" % (d, e.strerror))
with open(os.path.join(sys.argv[2], "k.so")) as f:
    out.append("build=" + f.read())
print(" ".join(out))
)PY";

std::string run_python_probe(const std::string& script, const std::string& build, const std::string& name, bool rw) {
  int pfd[2];
  if (pipe(pfd) != 0) return "pipe failed";
  const std::string worker = std::string(GAUNTLET_SOURCE_DIR) + "/python/gauntlet_pyworker.py";
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(pfd[1], 1);
    dup2(pfd[1], 2);
    if (unshare(CLONE_NEWNS) != 0) {
      std::printf("skip: no mount namespace: %s\n", strerror(errno));
      std::fflush(stdout);
      _exit(0);
    }
    execl("/usr/bin/python3", "python3", script.c_str(), worker.c_str(), build.c_str(), name.c_str(), rw ? "rw" : "ro",
          (char*)nullptr);
    std::printf("skip: no /usr/bin/python3\n");
    std::fflush(stdout);
    _exit(0);
  }
  ::close(pfd[1]);
  std::string got;
  char buf[4096];
  for (ssize_t k; (k = ::read(pfd[0], buf, sizeof buf)) > 0;) got.append(buf, size_t(k));
  ::close(pfd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return got;
}

TEST(SandboxFilesystem, PythonChildLocksTheSameWayAndKeepsItsBuildCacheReadOnly) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (a mount namespace of its own, a build cache owned by nobody)";
  const std::string name = "gauntlet-fs-lockdown-py-" + std::to_string(getpid());
  std::string b = "/var/tmp/gauntlet-fs-lockdown-build-XXXXXX";  // where the module caches live
  ASSERT_TRUE(mkdtemp(b.data()));
  (void)!chown(b.c_str(), 65534, 65534);
  chmod(b.c_str(), 0777);
  std::ofstream(b + "/k.so") << "built";
  const std::string script = b + ".py";
  std::ofstream(script) << kPythonProbe;
  const std::string ro = run_python_probe(script, b, name, false);
  const bool leaked_ro = exists(b + "/" + name);
  const std::string rw = run_python_probe(script, b, name, true);
  const bool wrote_rw = exists(b + "/" + name);
  bool on_host = false;
  for (const char* d : {"/var/tmp", "/dev/shm", "/run/lock"}) {
    on_host |= exists(std::string(d) + "/" + name);
    unlink((std::string(d) + "/" + name).c_str());
  }
  std::filesystem::remove_all(b);
  unlink(script.c_str());
  if (ro.rfind("skip: ", 0) == 0) GTEST_SKIP() << ro.substr(6);
  EXPECT_NE(ro.find("fs-readonly("), std::string::npos) << ro;
  EXPECT_NE(ro.find("private-tmpfs(/var/tmp,/dev/shm,/run/lock) build-cache-ro(1)"), std::string::npos) << ro;
  for (const char* d : {"/var/tmp", "/dev/shm", "/run/lock", "/tmp"})
    EXPECT_NE(ro.find(std::string(" ") + d + "=wrote"), std::string::npos) << d << ": " << ro;
  EXPECT_NE(ro.find(" " + b + "=Read-only file system"), std::string::npos) << ro;
  EXPECT_NE(ro.find("build=built"), std::string::npos) << ro;
  EXPECT_FALSE(leaked_ro) << ro;
  // The build child's cache is writable, and what it writes is the host's.
  EXPECT_NE(rw.find("build-cache-rw(1)"), std::string::npos) << rw;
  EXPECT_NE(rw.find(" " + b + "=wrote"), std::string::npos) << rw;
  EXPECT_TRUE(wrote_rw) << rw;
  EXPECT_FALSE(on_host) << "a marker reached the host's world-writable places: " << ro << "\n" << rw;
}

}  // namespace
}  // namespace gauntlet
