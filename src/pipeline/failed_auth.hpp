// Failed authentications, aggregated: an unauthenticated caller must not be able to grow the
// audit log one record per request. Each source address gets at most one audit record per
// interval ("airlock.failed_auth/v1": the count, the first and last time, the reasons and
// the tools it named, both bounded). Memory is bounded too: past `max_sources` distinct
// addresses in one interval, the rest share one overflow bucket ("(other)").
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "common/result.hpp"

namespace airlock::audit {
class AuditLog;
}

namespace airlock::pipeline {

struct FailedAuthOptions {
  std::chrono::milliseconds interval{60'000};
  std::size_t max_sources = 1024;   // distinct addresses kept per interval
  std::size_t max_tools = 8;        // distinct tool names kept per address
  std::size_t max_name_bytes = 64;  // a tool name longer than this is cut
};

class FailedAuthLog {
 public:
  FailedAuthLog(audit::AuditLog& log, FailedAuthOptions options = {});
  ~FailedAuthLog();  // stop()
  FailedAuthLog(const FailedAuthLog&) = delete;
  FailedAuthLog& operator=(const FailedAuthLog&) = delete;

  // One refused request. `reason` comes from a fixed set ("missing_key", "invalid_key").
  void note(std::string_view source, std::string_view tool, std::string_view reason);
  // Writes one record per pending source. What cannot be written stays pending.
  Status flush();
  void start();  // flushes every interval on its own thread
  void stop();   // ends that thread and flushes what is pending (idempotent)

  struct Source {
    std::uint64_t count = 0;
    std::chrono::system_clock::time_point first, last;
    std::map<std::string, std::uint64_t> reasons;
    std::map<std::string, std::uint64_t> tools;
    std::uint64_t other_tools = 0;  // requests naming a tool past max_tools
  };

 private:
  void run_flusher();

  audit::AuditLog& log_;
  FailedAuthOptions options_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::map<std::string, Source> pending_;  // by source address
  bool stopping_ = false;
  std::thread flusher_;
};

}  // namespace airlock::pipeline
