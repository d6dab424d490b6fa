// Host-wide file locks (include/gauntlet/sandbox/file_lock.h).
#include "gauntlet/sandbox/file_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace gauntlet {

bool flock_retrying(int fd, int op) {
  while (flock(fd, op) != 0)
    if (errno != EINTR) return false;
  return true;
}

bool FileLock::acquire(const std::string& path, int op) {
  unlock();
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd_ < 0) return false;
  if (!flock_retrying(fd_, op)) {
    ::close(fd_);
    fd_ = -1;
  }
  return fd_ >= 0;
}

bool FileLock::lock(const std::string& path, Mode mode) {
  return acquire(path, mode == Mode::Exclusive ? LOCK_EX : LOCK_SH);
}

bool FileLock::try_lock(const std::string& path, Mode mode) {
  return acquire(path, (mode == Mode::Exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB);
}

void FileLock::unlock() {
  if (fd_ >= 0) ::close(fd_);  // closing the description releases its lock
  fd_ = -1;
}

}  // namespace gauntlet
