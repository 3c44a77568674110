// The data directory belongs to one daemon: an advisory lock (flock) on <dataDir>/airlock.lock,
// held for the daemon's life and taken before recovery touches anything. A second daemon on
// the same directory refuses to start and names the holder. The lock file says who holds it:
// the holder's pid on its first line and, once a listening daemon serves, the URL a local
// client reaches it at on its second (`airlock mcp --config` bridges to that daemon instead of
// starting its own, docs/mcp-server.md).
#pragma once

#include <string>

#include "common/result.hpp"
#include "common/unique_fd.hpp"

namespace airlock::storage {

class DataDirLock {
 public:
  static Result<DataDirLock> acquire(const std::string& data_dir);
  static std::string path_in(const std::string& data_dir) { return data_dir + "/airlock.lock"; }

  // Writes `url` (http[s]://HOST:PORT, a loopback or the listen address) below the pid.
  Status announce(const std::string& url);

  // Who holds a data directory's lock, read without taking it.
  struct Holder {
    bool held = false;
    std::string pid;  // "unknown" when the file does not say
    std::string url;  // "" until the holder announces one (an embedded `airlock mcp` never does)
  };
  static Result<Holder> holder(const std::string& data_dir);

 private:
  explicit DataDirLock(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;  // the lock lives as long as this descriptor
};

}  // namespace airlock::storage
