// The data directory belongs to one daemon: an advisory lock (flock) on <dataDir>/airlock.lock,
// held for the daemon's life and taken before recovery touches anything. A second daemon on
// the same directory refuses to start and names the holder (its pid is in the lock file).
#pragma once

#include <string>

#include "common/result.hpp"
#include "common/unique_fd.hpp"

namespace airlock::server {

class DataDirLock {
 public:
  static Result<DataDirLock> acquire(const std::string& data_dir);
  static std::string path_in(const std::string& data_dir) { return data_dir + "/airlock.lock"; }

 private:
  explicit DataDirLock(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;  // the lock lives as long as this descriptor
};

}  // namespace airlock::server
