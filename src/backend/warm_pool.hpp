// The warm templates of a daemon's local backend: one per warm tool (keyed by what it runs),
// each on a thread of its own that launches it, supervises it and, when it dies, replaces it.
// A call leases the ready template of its tool; with none ready it runs cold, and says why.
// Each template keeps kPreparedChildren children started ahead of demand (fresh namespaces,
// cgroup, tmpfs and policy, waiting for their input): a call takes one and hands it its input,
// and the next is prepared off the call's path. docs/warm-start.md.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/result.hpp"
#include "sandbox/sandbox.hpp"
#include "sandbox/warm/warm.hpp"

namespace airlock::backend {

// A template is replaced after recycle_calls calls or recycle_after: its successor starts then
// and takes the calls once it is ready.
struct WarmSettings {
  std::uint32_t recycle_calls = 1000;
  std::chrono::milliseconds recycle_after{10 * 60 * 1000};
};

// Children each template keeps started ahead of demand. Each holds two processes and a cgroup
// of the call's limits while it waits (counted in the template's user namespace).
inline constexpr std::size_t kPreparedChildren = 2;

struct WarmPoolStats {
  std::uint64_t templates_started = 0;
  std::uint64_t templates_failed = 0;   // launched, never ready
  std::uint64_t templates_died = 0;     // ended while still in use (killed, crashed)
  std::uint64_t templates_recycled = 0;
};

class WarmPool {
  struct Live;

 public:
  explicit WarmPool(unsigned max_templates);
  ~WarmPool();
  WarmPool(const WarmPool&) = delete;
  WarmPool& operator=(const WarmPool&) = delete;

  // One call's hold on a template: it lives until the lease ends.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& other) noexcept = default;
    Lease& operator=(Lease&& other) noexcept;
    ~Lease();
    explicit operator bool() const { return live_ != nullptr; }
    // The call in a prepared child handed `call` (Sandbox::hand_over), or, with none of its
    // shape prepared, in a child started now. Either way, from now on its template prepares
    // children shaped as `call` (sandbox::same_sandbox).
    Result<std::unique_ptr<sandbox::Sandbox>> start_call(const sandbox::Spec& call) const;

   private:
    friend class WarmPool;
    explicit Lease(std::shared_ptr<Live> live) : live_(std::move(live)) {}
    void release();
    std::shared_ptr<Live> live_;
  };

  // The ready template for `key` (its Spec is `template_spec`), or an empty lease and, in
  // `why_cold`, why there is none; then a template is started in the background.
  Lease lease(const std::string& key, const sandbox::Spec& template_spec,
              const WarmSettings& settings, std::string& why_cold);

  // Kills every template (their calls end signaled) and starts none from now on.
  void shutdown();
  WarmPoolStats stats() const;
  std::size_t ready_templates() const;
  // Children prepared and waiting for a call, over every template.
  std::size_t prepared_children() const;

 private:
  struct Entry {
    std::shared_ptr<Live> current;  // ready, taking calls
    bool starting = false;
    std::string last_error;
    std::chrono::steady_clock::time_point failed_at{};
    std::chrono::steady_clock::time_point last_used{};
  };

  void start_template(const std::string& key, Entry& entry,
                      const sandbox::Spec& spec);  // with mu_ held
  void serve_template(std::string key, sandbox::Spec spec);
  bool evict_least_recent(const std::string& except);  // with mu_ held
  std::size_t templates_in_use() const;               // with mu_ held
  void join_finished_threads();                        // with mu_ held

  const unsigned max_templates_;
  mutable std::mutex mu_;
  std::map<std::string, Entry> entries_;
  std::list<std::shared_ptr<Live>> all_;  // every live template, for shutdown
  std::list<std::pair<std::thread, std::shared_ptr<bool>>> threads_;
  WarmPoolStats stats_;
  bool stopping_ = false;
};

}  // namespace airlock::backend
