// Locking a sandboxed child's filesystem: every mount read-only, a fresh tmpfs over each world-writable place.
#include "gauntlet/sandbox/fs_lockdown.h"

#include <errno.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>

namespace gauntlet {
namespace {

// mountinfo writes space, tab, newline and backslash in a path as \ooo.
std::string unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && std::isdigit((unsigned char)s[i + 1]) &&
        std::isdigit((unsigned char)s[i + 2]) && std::isdigit((unsigned char)s[i + 3])) {
      out += char((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

unsigned long option_flags(const std::string& options) {
  unsigned long f = 0;
  std::stringstream ss(options);
  for (std::string o; std::getline(ss, o, ',');) {
    if (o == "ro") f |= MS_RDONLY;
    else if (o == "nosuid") f |= MS_NOSUID;
    else if (o == "nodev") f |= MS_NODEV;
    else if (o == "noexec") f |= MS_NOEXEC;
    else if (o == "noatime") f |= MS_NOATIME;
    else if (o == "nodiratime") f |= MS_NODIRATIME;
    else if (o == "relatime") f |= MS_RELATIME;
    else if (o == "strictatime") f |= MS_STRICTATIME;
  }
  return f;
}

bool under(const std::string& path, const std::string& dir) {
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
                         (dir == "/" || path[dir.size()] == '/'));
}

bool is_dir(const std::string& p) {
  struct stat st {};
  return lstat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

const std::vector<std::string>& world_writable_dirs() {
  static const std::vector<std::string> dirs = {"/tmp", "/var/tmp", "/dev/shm", "/run/lock"};
  return dirs;
}

std::vector<MountPoint> parse_mountinfo(const std::string& text) {
  // "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue": the
  // fifth field is the mount point, the sixth the per-mount options.
  std::vector<MountPoint> out;
  std::stringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::stringstream f(line);
    std::string id, parent, dev, root, point, options;
    if (!(f >> id >> parent >> dev >> root >> point >> options)) continue;
    out.push_back({unescape(point), option_flags(options)});
  }
  return out;
}

std::string lock_down_filesystem(const std::vector<std::string>& cover, const std::vector<std::string>& keep) {
  std::stringstream text;
  text << std::ifstream("/proc/self/mountinfo").rdbuf();
  const std::vector<MountPoint> mounts = parse_mountinfo(text.str());
  std::string failed;
  auto fail = [&](const std::string& path) {
    if (failed.empty()) failed = path + ": " + strerror(errno);
  };
  if (mounts.empty()) {
    errno = ENOENT;
    fail("/proc/self/mountinfo");
  }
  std::set<std::string> done;
  int readonly = 0;
  for (const MountPoint& m : mounts) {
    if (under(m.path, "/proc") || !done.insert(m.path).second) continue;  // a stacked mount: the top one
    const bool spared = std::any_of(cover.begin(), cover.end(), [&](const std::string& d) { return under(m.path, d); }) ||
                        std::any_of(keep.begin(), keep.end(), [&](const std::string& d) { return under(m.path, d); });
    if (spared) continue;
    // The path reaches the topmost mount there; a mount under a covered place is hidden anyway.
    const unsigned long keep_flags = m.flags & ~MS_RDONLY;
    if (mount(nullptr, m.path.c_str(), nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY | keep_flags, nullptr) == 0)
      ++readonly;
    else if (errno != ENOENT)  // a mount point that is not reachable by its path cannot be written through it
      fail(m.path);
  }
  std::string note = failed.empty() ? "fs-readonly(" + std::to_string(readonly) + " mounts)"
                                    : "fs-readonly=partial(" + failed + ")";
  std::string covered, cover_failed;
  for (const std::string& d : cover) {
    if (!is_dir(d)) continue;  // nothing to write into where the host has no such place
    if (mount("tmpfs", d.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=256m,mode=1777") == 0)
      covered += (covered.empty() ? "" : ",") + d;
    else if (cover_failed.empty())
      cover_failed = d + ": " + strerror(errno);
  }
  if (!covered.empty()) note += " private-tmpfs(" + covered + ")";
  if (!cover_failed.empty()) note += " private-tmpfs=partial(" + cover_failed + ")";
  return note;
}

}  // namespace gauntlet
