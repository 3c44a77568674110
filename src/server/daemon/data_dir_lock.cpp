#include "server/daemon/data_dir_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace airlock::server {
namespace {

std::string read_holder(int fd) {
  char buffer[32] = {};
  ssize_t n = ::pread(fd, buffer, sizeof buffer - 1, 0);
  std::string pid = n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : "";
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  return pid.empty() ? "unknown" : pid;
}

}  // namespace

Result<DataDirLock> DataDirLock::acquire(const std::string& data_dir) {
  const std::string path = path_in(data_dir);
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) return Error::make("storage", "cannot open " + path + ": " + std::strerror(errno));
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK)
      return Error::make("storage", "cannot lock " + path + ": " + std::strerror(errno));
    return Error::make("storage", "the data directory " + data_dir +
                                      " is in use by another airlock-serve (pid " +
                                      read_holder(fd.get()) + "; lock file " + path + ")");
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd.get(), 0) != 0 ||
      ::pwrite(fd.get(), pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size()))
    return Error::make("storage", "cannot write " + path + ": " + std::strerror(errno));
  return DataDirLock(std::move(fd));
}

}  // namespace airlock::server
