// Covering GPU device nodes with /dev/null in a child's private mount namespace.
#include "gauntlet/sandbox/device_nodes.h"

#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include <vector>

namespace gauntlet {

bool is_gpu_device_name(const std::string& name) {
  return name.rfind("nvidia", 0) == 0 || name == "dri" || name == "kfd";
}

int hide_gpu_device_nodes(const std::string& dev_dir, std::string* error) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dev_dir.c_str())) {
    while (dirent* e = readdir(d))
      if (is_gpu_device_name(e->d_name)) names.push_back(e->d_name);
    closedir(d);
  }
  int hidden = 0;
  for (const std::string& n : names) {
    const std::string path = dev_dir + "/" + n;
    struct stat st {};
    if (lstat(path.c_str(), &st) != 0 || S_ISLNK(st.st_mode)) continue;
    int rc;
    if (S_ISDIR(st.st_mode))
      rc = mount("tmpfs", path.c_str(), "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=0755");
    else
      rc = mount("/dev/null", path.c_str(), nullptr, MS_BIND, nullptr);
    if (rc == 0) {
      ++hidden;
    } else if (error && error->empty()) {
      *error = path + ": " + strerror(errno);
    }
  }
  return hidden;
}

bool cuda_device_present(std::string* why) {
  const char* off = getenv("GAUNTLET_NO_CUDA");
  if (off && std::string(off) == "1") return (*why = "GAUNTLET_NO_CUDA=1", false);
  if (access("/dev/nvidiactl", F_OK) != 0) return (*why = "no CUDA device (/dev/nvidiactl absent)", false);
  return true;
}

}  // namespace gauntlet
