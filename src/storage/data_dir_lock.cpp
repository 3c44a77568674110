#include "storage/data_dir_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace airlock::storage {
namespace {

// The lock file's content: "PID\n" and, once announced, "URL\n".
DataDirLock::Holder read_holder(int fd) {
  char buffer[512] = {};
  const ssize_t n = ::pread(fd, buffer, sizeof buffer - 1, 0);
  const std::string text = n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : "";
  DataDirLock::Holder holder;
  const auto first_end = text.find('\n');
  holder.pid = text.substr(0, first_end);
  if (holder.pid.empty()) holder.pid = "unknown";
  if (first_end != std::string::npos) {
    const auto second_end = text.find('\n', first_end + 1);
    // Only a whole line: a URL cut short by a write in progress is no URL.
    if (second_end != std::string::npos) holder.url = text.substr(first_end + 1, second_end - first_end - 1);
  }
  return holder;
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
                                      read_holder(fd.get()).pid + "; lock file " + path + ")");
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd.get(), 0) != 0 ||
      ::pwrite(fd.get(), pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size()))
    return Error::make("storage", "cannot write " + path + ": " + std::strerror(errno));
  return DataDirLock(std::move(fd));
}

Status DataDirLock::announce(const std::string& url) {
  const std::string text = std::to_string(::getpid()) + "\n" + url + "\n";
  if (::pwrite(fd_.get(), text.data(), text.size(), 0) != static_cast<ssize_t>(text.size()))
    return Error::make("storage", std::string("cannot write the data directory's lock file: ") + std::strerror(errno));
  return {};
}

Result<DataDirLock::Holder> DataDirLock::holder(const std::string& data_dir) {
  const std::string path = path_in(data_dir);
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) {
    if (errno == ENOENT) return Holder{};  // no daemon has used the directory yet
    return Error::make("storage", "cannot open " + path + ": " + std::strerror(errno));
  }
  // A shared lock taken at once means no daemon holds the exclusive one; it is let go at once.
  if (::flock(fd.get(), LOCK_SH | LOCK_NB) == 0) {
    ::flock(fd.get(), LOCK_UN);
    return Holder{};
  }
  if (errno != EWOULDBLOCK) return Error::make("storage", "cannot test the lock on " + path + ": " + std::strerror(errno));
  Holder holder = read_holder(fd.get());
  holder.held = true;
  return holder;
}

}  // namespace airlock::storage
