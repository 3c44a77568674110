// stat(2) of a host path that gives up after a timeout. A path on an unresponsive filesystem
// (a dead NFS server, a FUSE daemon that stopped answering) blocks its caller in the kernel
// for as long as the filesystem stays silent: a daemon thread preparing a sandbox whose bind
// lies there would wait with it for good. The lookup runs on a thread of its own, and one that
// does not answer in time is left behind (it ends when the filesystem answers or is aborted);
// at most kMaxHungLookups are left at once, past which lookups are refused without waiting.
#pragma once

#include <sys/stat.h>

#include <chrono>
#include <cstddef>
#include <string>

#include "common/result.hpp"

namespace airlock::sandbox {

inline constexpr std::size_t kMaxHungLookups = 16;

struct HostStat {
  int err = 0;  // stat's errno; 0: `st` holds the answer
  struct stat st {};
};

// The answer, or setup_error when the filesystem did not answer within `timeout` (or too many
// earlier lookups still wait).
Result<HostStat> stat_within(const std::string& path, std::chrono::milliseconds timeout);

// Lookups left waiting now.
std::size_t hung_lookups();

}  // namespace airlock::sandbox
