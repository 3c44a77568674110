// Deletes what Airlock left in the cluster: pods labelled managed-by=airlock whose invocation
// is not running in this daemon and whose expiry (an annotation: creation + timeout + the
// Pending allowance) has passed. Their Secrets and NetworkPolicies go with them (owner
// references). Runs once at start and every gcInterval, so a daemon that died mid-call
// leaves nothing for long.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "backend/kubernetes/kube_api.hpp"

namespace airlock::backend::kubernetes {

struct GcPass {
  std::size_t deleted = 0;
  std::string error;  // "" when the pass could list
};

// One pass. `is_running(pod name)`: true for this daemon's runs in flight.
GcPass collect_garbage(KubeApi& api, const std::function<bool(const std::string&)>& is_running,
                       std::int64_t now_unix_seconds);

// Deletes the pods of one invocation (labelled with it), expired or not: what a dead replica
// left (another replica records the invocation as aborted). How many it deleted.
Result<std::size_t> delete_pods_of(KubeApi& api, const std::string& invocation_id);

// Runs passes on a thread of its own until stopped.
class GarbageCollector {
 public:
  GarbageCollector(std::function<void()> pass, std::chrono::milliseconds interval);
  ~GarbageCollector();  // stops and joins

 private:
  void loop();
  std::function<void()> pass_;
  std::chrono::milliseconds interval_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace airlock::backend::kubernetes
