// Gateway's internals, shared by its call path (gateway.cpp) and its reaper thread
// (gateway_reaper.cpp). Not for other users.
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include "mcp/gateway.hpp"
#include "mcp/server_instance.hpp"

namespace airlock::mcp {

using Clock = std::chrono::steady_clock;

inline constexpr const char* kListingOwner = "airlock listing";
inline constexpr std::chrono::milliseconds kFirstBackoff{500};
inline constexpr std::chrono::milliseconds kMaxBackoff{30'000};
// An instance whose credentials expire within a call's timeout and this is replaced first.
inline constexpr std::chrono::seconds kCredentialRenewMargin{10};

// One (server, owner): at most one instance at a time, and what its failures were.
struct Slot {
  std::string server, owner;
  std::mutex start_mu;  // held while an instance starts: two first calls start one process
  // The rest under Gateway::Impl::mu.
  std::shared_ptr<ServerInstance> instance;
  policy::McpServerConfig config;  // what `instance` runs
  int failures = 0;                // in a row, since a call last succeeded
  Clock::time_point retry_at{};
  std::string last_failure;
  int active = 0;                  // calls in it now (starting included)
  Clock::time_point last_used{};
  bool relist = false;             // the server said its tools changed
  // The instance's first listing has gone to `listed`. Until then it is not listed again:
  // a re-listing first would make its second version the one pinned at first sight.
  bool first_listing_told = false;
};

struct Gateway::Impl {
  GatewayOptions options;
  mutable std::mutex mu;
  std::condition_variable cv;  // the reaper waits on it; calls ending wait in shutdown()
  std::map<std::string, policy::McpServerConfig> servers;
  std::map<std::pair<std::string, std::string>, std::shared_ptr<Slot>> slots;
  bool stopped = false;
  bool poked = false;  // the reaper has something to look at
  std::size_t max_instances = 64;  // all servers together
  std::thread reaper;
  // Re-listings run here, not on the reaper: a server slow to list again holds up no other
  // server's idle stop.
  std::deque<std::weak_ptr<Slot>> relist_queue;
  std::thread relister;

  // Under mu: the slot's instance taken away (the caller kills and drops it outside the
  // lock). A crash counts towards the backoff.
  std::shared_ptr<ServerInstance> detach(Slot& slot, bool crashed, const std::string& why);
  void poke();

  // `call`: the call it is for (its owner's credentials are leased from it); null for a
  // listing, which runs without the server's credentials.
  Result<std::shared_ptr<ServerInstance>> ensure_running(const std::shared_ptr<Slot>& slot,
                                                         const pipeline::McpToolCall* call);
  Result<std::shared_ptr<ServerInstance>> start_instance(const std::shared_ptr<Slot>& slot,
                                                         const policy::McpServerConfig& config,
                                                         const pipeline::McpToolCall* call);
  Result<pipeline::McpToolResult> call_in(const std::shared_ptr<Slot>& slot,
                                          const pipeline::McpToolCall& call);
  // `use` on the server's listing instance (owner kListingOwner, no credentials), started if
  // it is not running.
  template <typename T>
  Result<T> with_listing_instance(const std::string& server, const std::function<Result<T>(ServerInstance&)>& use);
  Error crashed(const std::shared_ptr<Slot>& slot, const std::shared_ptr<ServerInstance>& inst,
                const Error& error);

  // Under mu: room for `extra` more instances of `server` (and in total), made by detaching
  // the idle instances used least recently (into `retired`, killed outside the lock). An
  // error when only busy ones are left. With extra 0 (the reaper, after a lowered cap): the
  // idle ones over every cap go.
  Status make_room(std::size_t extra, const std::string* server,
                   std::vector<std::shared_ptr<ServerInstance>>& retired);

  void reap_loop();
  void reap_once(std::unique_lock<std::mutex>& lock);
  void relist_loop();
  void relist(const std::shared_ptr<Slot>& slot);
};

}  // namespace airlock::mcp
