// `airlock serve` as a child process for the benchmarks: a temporary directory with a config
// and its tools, a free port, ready once /healthz answers 200; stopped (SIGTERM) at the end.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "common/result.hpp"

namespace airlock::bench {

inline constexpr const char* kBenchKey = "bench-key";

// The principals block that lets kBenchKey call every tool, for a config's text.
std::string bench_principal_yaml();

class Daemon {
 public:
  // `files`: path relative to the directory -> content (the config is airlock.yaml).
  static Result<std::unique_ptr<Daemon>> start(const std::map<std::string, std::string>& files);
  ~Daemon();
  std::uint16_t port() const { return port_; }
  const std::string& dir() const { return dir_; }

 private:
  Daemon() = default;
  Status wait_ready();
  std::string dir_;
  std::uint16_t port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace airlock::bench
