#include "backend/kubernetes/garbage_collector.hpp"

#include "backend/kubernetes/pod_objects.hpp"

namespace airlock::backend::kubernetes {

using nlohmann::json;

namespace {

// An expiry that is missing or unreadable counts as passed: the pod is Airlock's (its label)
// and nothing says it is still wanted.
std::int64_t expiry_of(const json& pod) {
  const json& meta = pod["metadata"];
  if (!meta.contains("annotations") || !meta["annotations"].contains(kExpiresAnnotation)) return 0;
  try {
    return std::stoll(meta["annotations"][kExpiresAnnotation].get<std::string>());
  } catch (...) {
    return 0;
  }
}

}  // namespace

GcPass collect_garbage(KubeApi& api, const std::function<bool(const std::string&)>& is_running,
                       std::int64_t now_unix_seconds) {
  GcPass pass;
  auto pods = api.list("pods", std::string(kManagedByLabel) + "=airlock");
  if (!pods) {
    pass.error = pods.error().message;
    return pass;
  }
  for (const auto& pod : (*pods)["items"]) {
    std::string name = pod["metadata"].value("name", "");
    if (name.empty() || is_running(name) || expiry_of(pod) > now_unix_seconds) continue;
    if (api.remove("pods", name)) ++pass.deleted;
  }
  return pass;
}

Result<std::size_t> delete_pods_of(KubeApi& api, const std::string& invocation_id) {
  auto pods = api.list("pods", std::string(kManagedByLabel) + "=airlock," + kInvocationLabel + "=" +
                                   label_value(invocation_id));
  if (!pods) return pods.error();
  std::size_t deleted = 0;
  for (const auto& pod : (*pods)["items"]) {
    const std::string name = pod["metadata"].value("name", "");
    if (name.empty()) continue;
    if (auto removed = api.remove("pods", name); !removed) return removed.error();
    ++deleted;
  }
  return deleted;
}

GarbageCollector::GarbageCollector(std::function<void()> pass, std::chrono::milliseconds interval)
    : pass_(std::move(pass)), interval_(interval), thread_([this] { loop(); }) {}

GarbageCollector::~GarbageCollector() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void GarbageCollector::loop() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    lock.unlock();
    pass_();
    lock.lock();
    wake_.wait_for(lock, interval_, [this] { return stop_; });
  }
}

}  // namespace airlock::backend::kubernetes
