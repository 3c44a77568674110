// The MCP server's state between messages: the sessions that initialize opened (2025-06-18,
// 2025-11-25), each bound to the principal that opened it and bounded in number, and the
// tools/call requests in flight, which notifications/cancelled finds by their request id.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "pipeline/invocation_control.hpp"

namespace airlock::server {

// Sessions held at once: by one principal (the verified agent and user), and in all.
inline constexpr std::size_t kMaxMcpSessionsPerPrincipal = 256;
inline constexpr std::size_t kMaxMcpSessions = 4096;

class McpSessions {
 public:
  explicit McpSessions(std::size_t capacity = kMaxMcpSessions,
                       std::size_t per_principal = kMaxMcpSessionsPerPrincipal)
      : capacity_(capacity), per_principal_(per_principal) {}
  // A new session of `principal` under `revision`: its id (128 random bits, hex). A principal
  // holding `per_principal` sessions loses its own idle longest; when the table is full, the
  // session idle longest of the principals holding most goes. One principal never evicts another's sessions but from a
  // table it cannot fill alone.
  std::string open(const std::string& principal, const std::string& revision);
  // The revision of session `id` when `principal` owns it; nullopt for a session that does
  // not exist, has gone, or is another principal's (the caller cannot tell which).
  std::optional<std::string> revision(const std::string& id, const std::string& principal);
  // Ends session `id` of `principal`; false when there is none of theirs.
  bool close(const std::string& id, const std::string& principal);
  std::size_t size() const;

 private:
  struct Session {
    std::string principal, revision;
    std::uint64_t last_used = 0;
  };
  // Under mu_: drops the session idle longest of those whose principal `whose` names.
  void evict_oldest(const std::function<bool(const std::string&)>& whose);

  mutable std::mutex mu_;
  std::size_t capacity_, per_principal_;
  std::map<std::string, std::size_t> held_;  // sessions by principal
  std::uint64_t clock_ = 0;  // a counter, not time: only the order of use matters
  std::map<std::string, Session> sessions_;
};

// tools/call requests running now, by (channel, request id): a channel is a session, or the
// stdio connection.
class McpCallsInFlight {
 public:
  void add(const std::string& key, std::shared_ptr<pipeline::InvocationControl> control);
  void remove(const std::string& key);
  // Cancels the call; false when none runs under `key`.
  bool cancel(const std::string& key);
  static std::string key(const std::string& channel, const std::string& request_id);

 private:
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<pipeline::InvocationControl>> calls_;
};

}  // namespace airlock::server
