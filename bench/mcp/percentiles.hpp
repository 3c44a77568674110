// Latency samples of one benchmark, reported as p50/p99 counters (as bench/load does).
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

namespace airlock::bench {

class Latencies {
 public:
  void add(std::chrono::steady_clock::duration d) {
    ms_.push_back(std::chrono::duration<double, std::milli>(d).count());
  }
  // p50_ms, p99_ms and the number of calls, on the benchmark's row (names after `prefix`).
  void report(benchmark::State& state, const std::string& prefix = "") const {
    state.counters[prefix + "p50_ms"] = at(0.50);
    state.counters[prefix + "p99_ms"] = at(0.99);
    state.counters[prefix + "calls"] = static_cast<double>(ms_.size());
  }

 private:
  double at(double p) const {
    if (ms_.empty()) return 0;
    auto v = ms_;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
  }
  std::vector<double> ms_;
};

}  // namespace airlock::bench
