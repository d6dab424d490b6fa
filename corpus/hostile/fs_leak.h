// What the filesystem-containment kernels share: the places a later child could look, one token per process.
#pragma once
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fs_leak {

// Every place outside the private /tmp where a sandboxed child (uid nobody, or the user inside a
// user namespace) might leave a file for a later child: the world-writable directories, the
// shared module build cache, home directories and the directory of the kernel's own source.
inline std::vector<std::string> places(const char* source_file) {
  std::vector<std::string> p = {"/var/tmp", "/dev/shm", "/run/lock", "/var/tmp/gauntlet-modules",
                                "/var/tmp/gauntlet-modules/torch_extensions", "/root"};
  if (const char* home = std::getenv("HOME")) p.push_back(home);
  const std::string src = source_file;
  if (src.rfind('/') != std::string::npos) p.push_back(src.substr(0, src.rfind('/')));
  return p;
}

// Random per process: a file holding another token was written by another child.
inline const std::string& token() {
  static const std::string t = [] {
    unsigned char b[16] = {};
    const int fd = ::open("/dev/urandom", O_RDONLY);
    if (fd >= 0) {
      ssize_t got = ::read(fd, b, sizeof b);
      (void)got;
      ::close(fd);
    }
    char hex[33] = {};
    for (int i = 0; i < 16; ++i) std::snprintf(hex + 2 * i, 3, "%02x", b[i]);
    return std::string(hex);
  }();
  return t;
}

// `name` in each place, holding this process's token then `payload`; returns the places written.
inline std::string leave(const std::vector<std::string>& where, const std::string& name, const std::string& payload) {
  std::string wrote;
  for (const std::string& d : where) {
    std::ofstream f(d + "/" + name, std::ios::binary | std::ios::trunc);
    if (!(f << token() << '\n' << payload) || !f.flush()) continue;
    wrote += (wrote.empty() ? "" : ",") + d;
  }
  return wrote;
}

// The payload of `name` in the first place holding one another process wrote; empty *from if none.
inline std::string foreign(const std::vector<std::string>& where, const std::string& name, std::string* from) {
  from->clear();
  for (const std::string& d : where) {
    std::ifstream f(d + "/" + name, std::ios::binary);
    std::string t;
    if (!f || !std::getline(f, t) || t == token()) continue;
    std::stringstream rest;
    rest << f.rdbuf();
    *from = d + "/" + name;
    return rest.str();
  }
  return "";
}

}  // namespace fs_leak
